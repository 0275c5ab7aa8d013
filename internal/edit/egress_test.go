package edit_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/manifest"
)

const ignoring = base + "egress_ignored:\n  - b.example.com\n"

// TestAllowEgressIgnored: a host the manifest ignores is allowed only when the user says so on
// a terminal; without one, or on a no, nothing is written.
func TestAllowEgressIgnored(t *testing.T) {
	for _, c := range []struct {
		name             string
		terminal, answer bool
		allowed          bool
	}{
		{"no terminal", false, false, false},
		{"declined", true, false, false},
		{"confirmed", true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, home := fixture(t, ignoring)
			fake := dockertest.New(t)
			r := recorder{answer: c.answer}
			env := r.env(fake, home)
			if c.terminal {
				env = r.confirming(fake, home)
			}
			if c.allowed {
				noSandbox(fake, p)
			}
			res, err := edit.AllowEgress(context.Background(), p, env, []string{"b.example.com"})
			ws := readFile(t, filepath.Join(p.Workspace, manifest.FileName))
			if !c.allowed {
				var ig *edit.IgnoredError
				if !errors.As(err, &ig) || ig.Host != "b.example.com" || err.Error() != "b.example.com is in egress_ignored" {
					t.Fatalf("AllowEgress = %+v, %v; want an IgnoredError", res, err)
				}
				if ws != ignoring {
					t.Errorf("workspace manifest = %q, want it unchanged", ws)
				}
				return
			}
			if err != nil || res.Message != "allowed: b.example.com" || !res.Changed {
				t.Fatalf("AllowEgress = %+v, %v", res, err)
			}
			if strings.Contains(ws, "egress_ignored") {
				t.Errorf("workspace manifest = %q, want the ignore decision gone", ws)
			}
			if len(r.questions) != 1 || r.questions[0] != "b.example.com is ignored; unignore and allow it?" {
				t.Errorf("questions = %q", r.questions)
			}
		})
	}
}

// TestAllowEgressAlready: allowing what is allowed changes nothing, and says so.
func TestAllowEgressAlready(t *testing.T) {
	p, home := fixture(t, base)
	fake := dockertest.New(t)
	noSandbox(fake, p)
	var r recorder
	res, err := edit.AllowEgress(context.Background(), p, r.env(fake, home), []string{"a.example.com"})
	if err != nil || res.Changed || res.Message != "already allowed: a.example.com" {
		t.Fatalf("AllowEgress = %+v, %v", res, err)
	}
}

// TestRemoveEgressMandatory: a host the rendered policy marks mandatory is kept, and said to be.
func TestRemoveEgressMandatory(t *testing.T) {
	p, home := fixture(t, base)
	writePolicy(t, p, "claude.ai")
	fake := dockertest.New(t)
	noSandbox(fake, p)
	var r recorder
	res, err := edit.RemoveEgress(context.Background(), p, r.env(fake, home), []string{"a.example.com", "claude.ai", "c.example.com"})
	if err != nil || !res.Changed {
		t.Fatalf("RemoveEgress = %+v, %v", res, err)
	}
	for _, want := range []string{"removed: a.example.com", "kept: claude.ai (mandatory", "not in the allowlist: c.example.com"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	if got := res.Reloaded.String(); got != "no sandbox of this project is running; the next run uses the new allowlist" {
		t.Errorf("Reloaded = %q", got)
	}
}

// TestRemoveEgressStale: a removal that running sandboxes may not have is saved but reported as
// a StaleError; one that changed nothing is not, whatever docker says.
func TestRemoveEgressStale(t *testing.T) {
	t.Run("not listed", func(t *testing.T) {
		p, home := fixture(t, base)
		r := recorder{ready: errDown}
		res, err := edit.RemoveEgress(context.Background(), p, r.env(dockertest.New(t), home), []string{"a.example.com"})
		var stale *edit.StaleError
		if !errors.As(err, &stale) || !errors.Is(stale.Skipped, errDown) || res == nil || !res.Changed {
			t.Fatalf("RemoveEgress = %+v, %v; want a StaleError with the result", res, err)
		}
		if want := "a.example.com removed from agentbox.yaml, but running sandboxes could not be listed to reload them: daemon down"; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
		if ws := readFile(t, filepath.Join(p.Workspace, manifest.FileName)); strings.Contains(ws, "a.example.com") {
			t.Errorf("workspace manifest = %q, want the removal saved", ws)
		}
	})
	t.Run("not reloaded", func(t *testing.T) {
		p, home := fixture(t, base)
		fake := dockertest.New(t)
		fake.On(psArgs(p), docker.Result{Stdout: []byte(`{"ID":"c1","Names":"abox-p-netd"}` + "\n")})
		fake.On("kill --signal HUP c1", docker.Result{ExitCode: 1, Stderr: []byte("no such container")})
		var r recorder
		_, err := edit.RemoveEgress(context.Background(), p, r.env(fake, home), []string{"a.example.com"})
		var stale *edit.StaleError
		if !errors.As(err, &stale) || len(stale.Failed) != 1 || stale.Skipped != nil {
			t.Fatalf("RemoveEgress = %v; want a StaleError naming the sandbox", err)
		}
		if !strings.HasPrefix(err.Error(), "a.example.com still allowed by 1 running sandbox(es) that were not reloaded: abox-p-netd: ") {
			t.Errorf("error = %q", err)
		}
	})
	t.Run("nothing removed", func(t *testing.T) {
		p, home := fixture(t, base)
		r := recorder{ready: errDown}
		res, err := edit.RemoveEgress(context.Background(), p, r.env(dockertest.New(t), home), []string{"c.example.com"})
		if err != nil || res.Changed {
			t.Fatalf("RemoveEgress = %+v, %v; want no change and no error", res, err)
		}
	})
}

// TestIgnoreEgress: an ignore decision takes the host out of the allowlist, except a mandatory
// one; unignore forgets it.
func TestIgnoreEgress(t *testing.T) {
	p, home := fixture(t, base)
	writePolicy(t, p, "claude.ai")
	fake := dockertest.New(t)
	noSandbox(fake, p) // both edits ask
	var r recorder
	env := r.env(fake, home)
	res, err := edit.IgnoreEgress(context.Background(), p, env, []string{"a.example.com", "claude.ai"})
	if err != nil || !res.Changed || !strings.HasPrefix(res.Message, "ignored: a.example.com (") || !strings.Contains(res.Message, "not ignored: claude.ai (mandatory") {
		t.Fatalf("IgnoreEgress = %+v, %v", res, err)
	}
	res, err = edit.UnignoreEgress(context.Background(), p, env, []string{"a.example.com"})
	if err != nil || res.Changed || !strings.HasPrefix(res.Message, "unignored: a.example.com") {
		t.Fatalf("UnignoreEgress = %+v, %v", res, err)
	}
	if ws := readFile(t, filepath.Join(p.Workspace, manifest.FileName)); strings.Contains(ws, "a.example.com") {
		t.Errorf("workspace manifest = %q: unignore must not allow the host again", ws)
	}
}
