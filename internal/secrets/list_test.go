package secrets

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
)

func TestList(t *testing.T) {
	synced := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cfg := &config.Secrets{Mappings: []config.SecretMapping{
		{Secret: "mapped.only", Env: "MAPPED"},
		{Secret: "both", File: "/run/both"},
	}}
	st := &State{Secrets: map[string]Record{
		"both":          {Source: "env", Reference: "OLD", SyncedAt: synced},
		"recorded.only": {Source: "prompt", SyncedAt: synced},
	}}
	use := Use{Need: Need{Secret: "used.only", Kind: UseEnv, By: "API_KEY"}, Project: "alpha", Profile: "default"}
	x := &Index{Uses: []Use{use}}
	stored := []string{"stored.only", "both"}

	got := List(stored, cfg, st, x, false)
	want := []Listing{
		// secrets.yaml's source wins over the one recorded at the last sync; the sync time stays.
		{Name: "both", Stored: true, Source: config.SecretFile, Reference: "/run/both", SyncedAt: &synced, UsedBy: []Use{}},
		{Name: "mapped.only", Source: config.SecretEnv, Reference: "MAPPED", UsedBy: []Use{}},
		{Name: "recorded.only", Source: "prompt", SyncedAt: &synced, UsedBy: []Use{}},
		{Name: "stored.only", Stored: true, UsedBy: []Use{}},
		{Name: "used.only", UsedBy: []Use{use}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List() mismatch (-want +got):\n%s", diff)
	}
	unused := List(stored, cfg, st, x, true)
	if len(unused) != 4 || unused[len(unused)-1].Name != "stored.only" {
		t.Errorf("List(unused) = %+v, want every secret but used.only", unused)
	}
	if empty := List(nil, &config.Secrets{}, &State{}, &Index{}, false); empty == nil || len(empty) != 0 {
		t.Errorf("List() of nothing = %#v, want an empty, non-nil list (--json prints [])", empty)
	}
}

func TestChanged(t *testing.T) {
	rows := []Row{{Secret: "a", Status: Created}, {Secret: "b", Status: Unchanged}, {Secret: "c", Status: Updated}, {Secret: "d", Status: Drifted}}
	if got, want := Changed(rows), []string{"a", "c"}; !cmp.Equal(got, want) {
		t.Errorf("Changed() = %v, want %v", got, want)
	}
}

func TestUsersOf(t *testing.T) {
	needs := []Need{
		{Secret: "gh", Kind: UseServer, By: "github"},
		{Secret: "gh", Kind: UseServer, By: "github"},
		{Secret: "gh", Kind: UseEnv, By: "GH_TOKEN"},
		{Secret: "other", Kind: UseEnv, By: "X"},
	}
	if got, want := UsersOf(needs, "gh"), "server github, env GH_TOKEN"; got != want {
		t.Errorf("UsersOf(gh) = %q, want %q", got, want)
	}
	if got := UsersOf(needs, "none"); got != "" {
		t.Errorf("UsersOf(none) = %q, want nothing", got)
	}
}

func TestServedAny(t *testing.T) {
	x := &Index{Uses: []Use{
		{Need: Need{Secret: "attached", Kind: UseEnv, By: "API_KEY"}},
		{Need: Need{Secret: "served", Kind: UseServer, By: "github"}},
		{Need: Need{Secret: "remote", Kind: UseRemote, By: "docs"}},
	}}
	for _, tc := range []struct {
		names []string
		want  bool
	}{
		{[]string{"attached"}, false},
		{[]string{"attached", "served"}, true},
		{[]string{"remote"}, true},
		{[]string{"unused"}, false},
		{nil, false},
	} {
		if got := x.ServedAny(tc.names...); got != tc.want {
			t.Errorf("ServedAny(%v) = %v, want %v", tc.names, got, tc.want)
		}
	}
}
