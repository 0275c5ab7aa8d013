package edit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/manifest"
)

func allow(host string) func(*manifest.Doc) error {
	return func(d *manifest.Doc) error { _, err := d.AllowEgress([]string{host}); return err }
}

// TestApply: an edit of an approved project is written to the workspace and the approved copy,
// keeps comments, is rendered with the new manifest, and reaches every running sandbox.
func TestApply(t *testing.T) {
	p, home := fixture(t, base)
	approve(t, p)
	fake := dockertest.New(t)
	fake.On(psArgs(p), docker.Result{Stdout: []byte(`{"ID":"c1","Names":"abox-p-netd"}` + "\n")})
	fake.On("kill --signal HUP c1", docker.Result{})
	var r recorder
	m, reloaded, err := edit.Apply(context.Background(), p, r.env(fake, home), allow("b.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	ws := readFile(t, filepath.Join(p.Workspace, manifest.FileName))
	if !strings.Contains(ws, "b.example.com") || !strings.Contains(ws, "# keep me") {
		t.Errorf("workspace manifest = %q, want b.example.com added and the comment kept", ws)
	}
	if ap := readFile(t, p.State.Approved()); ap != ws {
		t.Errorf("approved copy = %q, want the workspace's %q", ap, ws)
	}
	if len(m.Egress) != 2 || p.Manifest != m || string(p.Raw) != ws {
		t.Errorf("Apply = %+v; project holds %+v, %q", m, p.Manifest, p.Raw)
	}
	if len(r.renders) != 1 || r.renders[0] != ws {
		t.Errorf("renders = %q, want one of the edited manifest", r.renders)
	}
	if len(reloaded.Reloaded) != 1 || reloaded.Reloaded[0] != "abox-p-netd" || len(r.progress) != 1 {
		t.Errorf("Reloaded = %+v, progress %q", reloaded, r.progress)
	}
}

// TestApplyRefuses: an unapproved workspace change, an invalid result, the edit's own error
// and a failed render each stop the edit before any sandbox is reloaded; the first three before
// anything is written or rendered.
func TestApplyRefuses(t *testing.T) {
	own := errors.New("no such host")
	for _, c := range []struct {
		name      string
		workspace string // the approved manifest is base
		fn        func(*manifest.Doc) error
		renderErr error
		check     func(error) bool
		rendered  bool
	}{
		{"unapproved", base + "  - c.example.com\n", allow("b.example.com"), nil, func(err error) bool {
			var u *edit.UnapprovedError
			return errors.As(err, &u) && strings.Contains(u.Changed.Diff, "c.example.com") &&
				err.Error() == "refusing to edit an unapproved manifest"
		}, false},
		{"invalid", base, allow("exa mple.com"), nil, func(err error) bool {
			var inv *approval.InvalidEditError
			return errors.As(err, &inv)
		}, false},
		{"edit error", base, func(*manifest.Doc) error { return own }, nil, func(err error) bool { return err == own }, false},
		{"render error", base, allow("b.example.com"), own, func(err error) bool { return err == own }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, home := fixture(t, c.workspace)
			writeFile(t, p.State.Approved(), base)
			r := recorder{renderErr: c.renderErr}
			_, _, err := edit.Apply(context.Background(), p, r.env(dockertest.New(t), home), c.fn)
			if !c.check(err) {
				t.Fatalf("Apply = %v", err)
			}
			if got := len(r.renders) > 0; got != c.rendered {
				t.Errorf("rendered = %v, want %v", got, c.rendered)
			}
			if !c.rendered {
				if ws := readFile(t, filepath.Join(p.Workspace, manifest.FileName)); ws != c.workspace {
					t.Errorf("workspace manifest = %q, want it unchanged", ws)
				}
			}
		})
	}
}

// TestApplyNeverApproved: a project `abox up` never approved is edited in the workspace only.
func TestApplyNeverApproved(t *testing.T) {
	p, home := fixture(t, base)
	fake := dockertest.New(t)
	noSandbox(fake, p)
	var r recorder
	if _, _, err := edit.Apply(context.Background(), p, r.env(fake, home), allow("b.example.com")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.State.Approved()); !os.IsNotExist(err) {
		t.Errorf("a never-approved project got an approval: %v", err)
	}
}
