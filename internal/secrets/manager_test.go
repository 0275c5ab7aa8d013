package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/config"
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
