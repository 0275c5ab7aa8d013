package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/policy"
)

func TestLeaks(t *testing.T) {
	f := newFixture(t)
	// web's remote docs is un-narrowed and has no known tools, so web's netd passes any name;
	// the gateway also serves api's time. api's servers all have known tools.
	want := []Leak{{Project: "web", Workspace: "/src/web", Unlisted: []string{"docs"}, Foreign: []string{"time"}, Owners: []string{"api"}}}
	if diff := cmp.Diff(want, f.reg.Leaks(f.custom, f.cat)); diff != "" {
		t.Errorf("Leaks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, f.plan(t).Leaks); diff != "" {
		t.Errorf("Plan.Leaks (-want +got):\n%s", diff)
	}
}

func TestLeaksNone(t *testing.T) {
	tests := []struct {
		name string
		edit func(f *fixture)
	}{
		{"the unlisted server narrowed", func(f *fixture) {
			web := f.reg.Projects["aaaaaaaaaaaa"]
			web.Tools["docs"] = []string{"search_docs"}
			f.reg.Projects["aaaaaaaaaaaa"] = web
		}},
		{"alone on the profile", func(f *fixture) { delete(f.reg.Projects, "bbbbbbbbbbbb") }},
		{"every served server its own", func(f *fixture) {
			web := f.reg.Projects["aaaaaaaaaaaa"]
			web.Servers = append(web.Servers, "time")
			f.reg.Projects["aaaaaaaaaaaa"] = web
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.edit(f)
			if got := f.reg.Leaks(f.custom, f.cat); len(got) != 0 {
				t.Errorf("Leaks = %+v, want none", got)
			}
		})
	}
}

func TestLeaksCustomServerWithoutTools(t *testing.T) {
	f := newFixture(t)
	// notes with "*" (or no list) has no known tools: web now leaks through notes too, and api,
	// which declares notes un-narrowed, leaks web's github narrowing and fetch.
	f.custom["notes"] = config.CustomServer{Image: localImage('a'), Tools: []string{"*"}}
	api := f.reg.Projects["bbbbbbbbbbbb"]
	api.Servers = append(api.Servers, "notes")
	f.reg.Projects["bbbbbbbbbbbb"] = api
	got := f.reg.Leaks(f.custom, f.cat)
	want := []Leak{
		{Project: "web", Workspace: "/src/web", Unlisted: []string{"docs", "notes"}, Foreign: []string{"time"}, Owners: []string{"api"}},
		{Project: "api", Workspace: "/src/api", Unlisted: []string{"notes"}, Foreign: []string{"docs"}, Owners: []string{"web"}},
	}
	if diff := cmp.Diff(want, got, sortLeaks); diff != "" {
		t.Errorf("Leaks (-want +got):\n%s", diff)
	}
}

var sortLeaks = cmp.Transformer("sortLeaks", func(in []Leak) map[string]Leak {
	out := map[string]Leak{}
	for _, l := range in {
		out[l.Project] = l
	}
	return out
})

func TestForeignServers(t *testing.T) {
	got := ForeignServers([]string{"a", "c"}, []string{"d", "a", "b", "c", "b"})
	if want := []string{"b", "d"}; !cmp.Equal(got, want) {
		t.Errorf("ForeignServers = %v, want %v", got, want)
	}
	if got := ForeignServers([]string{"a"}, []string{"a"}); got != nil {
		t.Errorf("ForeignServers of its own = %v, want none", got)
	}
}

func TestUnlistedServers(t *testing.T) {
	m := &policy.MCP{Servers: []string{"docs", "fetch", "notes"}, Tools: map[string]string{"fetch": "fetch", "note_add": "notes"}, Unlisted: true}
	if got := UnlistedServers(m); !cmp.Equal(got, []string{"docs"}) {
		t.Errorf("UnlistedServers = %v, want docs", got)
	}
}
