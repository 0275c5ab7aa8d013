package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
)

func newManager(t *testing.T, st Store, env map[string]string) *Manager {
	t.Helper()
	dir := t.TempDir()
	return &Manager{
		Store:     st,
		Sources:   &Sources{Home: dir, Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }},
		Digests:   NewDigester([]byte("salt-0123456789abcdef"), testIterations),
		State:     &State{Secrets: map[string]Record{}},
		StatePath: filepath.Join(dir, "secrets.json"),
		Now:       func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) },
	}
}

// TestSyncAndDrift: sync creates, then leaves unchanged; a rotated source is drifted until the
// next sync updates it; --dry-run writes nothing; secrets.json never holds a value.
func TestSyncAndDrift(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{KindAbox, KindDesktop} {
		t.Run(kind, func(t *testing.T) {
			env := map[string]string{"TOKEN": fakeValue}
			st := &memStore{kind: kind, values: map[string]string{}}
			m := newManager(t, st, env)
			mp := config.SecretMapping{Secret: "a.token", Env: "TOKEN"}
			if r := m.Check(ctx, mp); r.Status != MissingInStore || r.OK() {
				t.Errorf("check before sync = %+v", r)
			}
			if r := m.Sync(ctx, mp, false, true); r.Status != WouldCreate || st.sets != 0 {
				t.Errorf("dry run = %+v, %d sets", r, st.sets)
			}
			if _, err := os.Stat(m.StatePath); !errors.Is(err, os.ErrNotExist) {
				t.Error("a dry run wrote secrets.json")
			}
			if r := m.Sync(ctx, mp, false, false); r.Status != Created || !r.OK() {
				t.Errorf("first sync = %+v", r)
			}
			if r := m.Sync(ctx, mp, false, false); r.Status != Unchanged || st.sets != 1 {
				t.Errorf("second sync = %+v, %d sets", r, st.sets)
			}
			if r := m.Check(ctx, mp); r.Status != Synced {
				t.Errorf("check after sync = %+v", r)
			}
			env["TOKEN"] = "rotated-" + fakeValue
			if r := m.Check(ctx, mp); r.Status != Drifted || r.OK() || strings.Contains(r.Detail, "rotated") {
				t.Errorf("check after rotation = %+v", r)
			}
			if r := m.Sync(ctx, mp, false, true); r.Status != WouldUpdate {
				t.Errorf("dry run after rotation = %+v", r)
			}
			if r := m.Sync(ctx, mp, false, false); r.Status != Updated {
				t.Errorf("sync after rotation = %+v", r)
			}
			data, _ := os.ReadFile(m.StatePath)
			if strings.Contains(string(data), fakeValue) || !strings.Contains(string(data), `"source": "env"`) ||
				!strings.Contains(string(data), `"reference": "TOKEN"`) {
				t.Errorf("secrets.json:\n%s", data)
			}
			delete(env, "TOKEN")
			if r := m.Sync(ctx, mp, false, false); r.Status != Unreadable || !strings.Contains(r.Detail, "TOKEN is not set") {
				t.Errorf("sync of an unset variable = %+v", r)
			}
		})
	}
}

func TestSyncSources(t *testing.T) {
	ctx := context.Background()
	st := &memStore{kind: KindAbox, values: map[string]string{"ext.key": "x", "typed.key": "y"}}
	m := newManager(t, st, nil)
	m.Sources.Prompt = func(string) ([]byte, error) { return []byte(fakeValue), nil }
	rows := []struct {
		mp          config.SecretMapping
		interactive bool
		want        string
	}{
		{config.SecretMapping{Secret: "ext.key", Source: config.SecretDocker}, false, External},
		{config.SecretMapping{Secret: "gone.key", Source: config.SecretDocker}, false, MissingInStore},
		{config.SecretMapping{Secret: "typed.key", Source: config.SecretPrompt}, false, Unchanged},
		{config.SecretMapping{Secret: "new.key", Source: config.SecretPrompt}, false, Unreadable},
		{config.SecretMapping{Secret: "new.key", Source: config.SecretPrompt}, true, Created},
	}
	for _, r := range rows {
		if got := m.Sync(ctx, r.mp, r.interactive, false); got.Status != r.want {
			t.Errorf("Sync(%s, interactive=%v) = %+v, want %s", r.mp.Secret, r.interactive, got, r.want)
		}
	}
	if st.values["ext.key"] != "x" {
		t.Error("a docker source was written")
	}
	if r := m.CheckUnmapped(ctx, "ext.key"); r.Status != External || !r.OK() {
		t.Errorf("CheckUnmapped(stored) = %+v", r)
	}
	if r := m.CheckUnmapped(ctx, "nowhere.key"); r.Status != Unmapped || r.OK() {
		t.Errorf("CheckUnmapped(absent) = %+v", r)
	}
	if err := m.Remove(ctx, "new.key"); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.State.Secrets["new.key"]; ok || st.values["new.key"] != "" {
		t.Error("Remove left the record or the value")
	}
}

// TestCheckDesktopUnrecorded: Desktop cannot give values back, so a value abox never stored is
// reported as drifted, with why.
func TestCheckDesktopUnrecorded(t *testing.T) {
	st := &memStore{kind: KindDesktop, values: map[string]string{"a.token": "x"}}
	m := newManager(t, st, map[string]string{"TOKEN": fakeValue})
	r := m.Check(context.Background(), config.SecretMapping{Secret: "a.token", Env: "TOKEN"})
	if r.Status != Drifted || !strings.Contains(r.Detail, "no digest recorded") {
		t.Errorf("Check = %+v", r)
	}
}

func TestOpen(t *testing.T) {
	ps := paths.Paths{Config: t.TempDir(), State: t.TempDir()}
	now := func() time.Time { return time.Unix(0, 0) }
	m, err := Open(ps, nil, &Sources{}, now)
	if err != nil {
		t.Fatalf("Open() on a fresh host: %v", err)
	}
	if m.StatePath != ps.SecretsState() || m.Digests == nil || m.State == nil || m.Now == nil {
		t.Errorf("Open() = %+v, want a manager on secrets.json with digests", m)
	}
	if _, err := os.Stat(ps.SecretsSalt()); err != nil {
		t.Errorf("Open() did not create the salt: %v", err)
	}
	if err := os.WriteFile(ps.SecretsState(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ps, nil, &Sources{}, now)
	var oe *OpenError
	if !errors.As(err, &oe) || oe.File != ps.SecretsState() || oe.Error() != oe.Err.Error() {
		t.Errorf("Open() with a corrupt secrets.json = %v, want an OpenError naming it", err)
	}
}

// TestPurge: rm leaves no copy: not in the store, not in secrets.json, not in any gateway's
// secrets file; the other lines stay.
func TestPurge(t *testing.T) {
	ctx := context.Background()
	st := &memStore{kind: KindAbox, values: map[string]string{"a.token": fakeValue, "b.token": "other-" + fakeValue}}
	m := newManager(t, st, nil)
	m.State.Secrets["a.token"] = Record{Source: "env", Reference: "TOKEN"}
	gw := t.TempDir()
	file := writeFile(t, filepath.Join(gw, "default", gateway.SecretsFile), "a.token="+fakeValue+"\nb.token=other-"+fakeValue+"\n", 0o600)
	was, err := m.Purge(ctx, "a.token", gw)
	if err != nil || !was {
		t.Fatalf("Purge(a.token) = %v, %v; want it was stored", was, err)
	}
	if _, ok := st.values["a.token"]; ok {
		t.Error("the store still holds a.token")
	}
	if _, ok := m.State.Secrets["a.token"]; ok {
		t.Error("secrets.json still records a.token")
	}
	if data, _ := os.ReadFile(file); string(data) != "b.token=other-"+fakeValue+"\n" {
		t.Errorf("gateway secrets file = %q, want only b.token's line", data)
	}
	if was, err := m.Purge(ctx, "a.token", gw); err != nil || was {
		t.Errorf("Purge of a removed secret = %v, %v; want not stored, no error", was, err)
	}
}

func TestReadGiven(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "tok"), fakeValue+"\n", 0o600)
	s := &Sources{Home: home, Env: func(k string) (string, bool) { return fakeValue, k == "TOKEN" }}
	for _, tc := range []struct {
		name        string
		g           Given
		source, ref string
		wantErr     error
	}{
		{name: "file, its absolute path recorded", g: Given{File: "~/tok"}, source: "file", ref: filepath.Join(home, "tok")},
		{name: "env", g: Given{Env: "TOKEN"}, source: "env", ref: "TOKEN"},
		{name: "stdin", g: Given{Stdin: strings.NewReader(fakeValue + "\r\n")}, source: "stdin"},
		{name: "the prompt, without a terminal", g: Given{}, source: "prompt", wantErr: ErrNoTerminal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, source, ref, err := s.ReadGiven(tc.g, "value of x")
			if source != tc.source || ref != tc.ref || !errors.Is(err, tc.wantErr) {
				t.Fatalf("ReadGiven() = %q, %q, %v; want %q, %q, %v", source, ref, err, tc.source, tc.ref, tc.wantErr)
			}
			if tc.wantErr == nil && string(v) != fakeValue {
				t.Errorf("value = %q, want the source's", v)
			}
		})
	}
}

// TestSyncAllAndCheckAll: sync gives a row per mapping in order; check adds a row for a
// required secret nobody mapped, and a row that needs attention names who requires it, while
// a row that is fine does not.
func TestSyncAllAndCheckAll(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{"TOKEN": fakeValue}
	st := &memStore{kind: KindAbox, values: map[string]string{}}
	m := newManager(t, st, env)
	cfg := &config.Secrets{Mappings: []config.SecretMapping{
		{Secret: "a.token", Env: "TOKEN"}, {Secret: "b.token", Env: "UNSET"},
	}}
	required := []Need{
		{Secret: "b.token", Kind: UseServer, By: "github"},
		{Secret: "c.key", Kind: UseEnv, By: "API_KEY"},
		{Secret: "a.token", Kind: UseRemote, By: "docs"},
	}
	if rows := m.CheckAll(ctx, cfg, required); len(rows) != 3 || rows[0].Status != MissingInStore ||
		rows[0].Detail != "needed by remote docs" {
		t.Fatalf("CheckAll before sync = %+v", rows)
	}
	rows := m.SyncAll(ctx, cfg.Mappings, false, false)
	if len(rows) != 2 || rows[0].Secret != "a.token" || rows[0].Status != Created || rows[1].Status != Unreadable {
		t.Fatalf("SyncAll = %+v", rows)
	}
	got := m.CheckAll(ctx, cfg, required)
	want := []Row{
		{Secret: "a.token", Status: Synced, Source: config.SecretEnv},
		{Secret: "b.token", Status: MissingInStore, Source: config.SecretEnv, Detail: "needed by server github"},
		{Secret: "c.key", Status: Unmapped, Source: "-", Detail: "required, in neither secrets.yaml nor the store; needed by env API_KEY"},
	}
	if len(got) != len(want) {
		t.Fatalf("CheckAll = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("CheckAll row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if rows := m.CheckAll(ctx, &config.Secrets{}, nil); rows != nil {
		t.Errorf("CheckAll of nothing = %+v, want no rows", rows)
	}
}

// held reports whether another holder has the lock at path.
func held(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// TestOpenLocked: with lock, the secrets lock is held until unlock, and released when Open
// fails; without, it is never taken.
func TestOpenLocked(t *testing.T) {
	ps := paths.Paths{Config: t.TempDir(), State: t.TempDir()}
	now := func() time.Time { return time.Unix(0, 0) }
	m, unlock, err := OpenLocked(ps, nil, &Sources{}, now, true)
	if err != nil || m == nil {
		t.Fatalf("OpenLocked = %v, %v", m, err)
	}
	if !held(t, ps.SecretsLock()) {
		t.Error("the secrets lock is not held after OpenLocked(lock)")
	}
	unlock()
	if held(t, ps.SecretsLock()) {
		t.Error("the secrets lock is still held after unlock")
	}
	if _, unlock, err := OpenLocked(ps, nil, &Sources{}, now, false); err != nil || held(t, ps.SecretsLock()) {
		t.Errorf("OpenLocked(no lock) = %v, held %v", err, held(t, ps.SecretsLock()))
	} else {
		unlock()
	}
	if err := os.WriteFile(ps.SecretsState(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, unlock, err = OpenLocked(ps, nil, &Sources{}, now, true)
	var oe *OpenError
	if m != nil || !errors.As(err, &oe) || oe.File != ps.SecretsState() {
		t.Errorf("OpenLocked with a corrupt secrets.json = %v, %v; want the OpenError", m, err)
	}
	unlock()
	if held(t, ps.SecretsLock()) {
		t.Error("a failed OpenLocked left the secrets lock held")
	}
}
