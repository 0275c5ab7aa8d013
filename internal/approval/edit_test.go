package approval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
)

func allow(host string) func(*manifest.Doc) error {
	return func(d *manifest.Doc) error { _, err := d.AllowEgress([]string{host}); return err }
}

// TestEdit: an edit of an approved project is written to the workspace and to the approved copy;
// a never-approved one only to the workspace; an unapproved change, a corrupt approval or an
// invalid result writes nothing.
func TestEdit(t *testing.T) {
	wsFile := func(p paths.Project) string { return filepath.Join(p.Workspace, manifest.FileName) }
	t.Run("approved", func(t *testing.T) {
		p := project(t)
		write(t, p.Approved(), good)
		m, raw, err := Edit(p, parse(t, good), []byte(good), allow("b.example.com"))
		if err != nil || !strings.Contains(string(raw), "b.example.com") || len(m.Egress) != 2 {
			t.Fatalf("Edit = %v, %q, %v", m, raw, err)
		}
		ws, _ := os.ReadFile(wsFile(p))
		ap, _ := os.ReadFile(p.Approved())
		if string(ws) != string(raw) || string(ap) != string(raw) {
			t.Errorf("workspace %q and approved %q, want both %q", ws, ap, raw)
		}
	})
	t.Run("never approved", func(t *testing.T) {
		p := project(t)
		if _, _, err := Edit(p, parse(t, good), []byte(good), allow("b.example.com")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p.Approved()); !os.IsNotExist(err) {
			t.Errorf("a never-approved project got an approval: %v", err)
		}
	})
	refused := []struct {
		name  string
		setup func(t *testing.T, p paths.Project) string // returns the workspace manifest
		edit  func(*manifest.Doc) error
		check func(error) bool
	}{
		{"unapproved change", func(t *testing.T, p paths.Project) string {
			write(t, p.Approved(), good)
			return good + "  - c.example.com\n"
		}, allow("b.example.com"), func(err error) bool {
			var c *ChangedError
			return errors.As(err, &c) && strings.Contains(c.Diff, "c.example.com")
		}},
		{"corrupt approval", func(t *testing.T, p paths.Project) string {
			write(t, p.Approved(), "version: [1")
			return good
		}, allow("b.example.com"), func(err error) bool { return errors.Is(err, ErrCorrupt) }},
		{"invalid result", func(t *testing.T, p paths.Project) string {
			write(t, p.Approved(), good)
			return good
		}, func(d *manifest.Doc) error { return d.Set("", "project") }, func(err error) bool { var ie *InvalidEditError; return errors.As(err, &ie) }},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			p := project(t)
			raw := tc.setup(t, p)
			before, _ := os.ReadFile(p.Approved())
			_, _, err := Edit(p, parse(t, raw), []byte(raw), tc.edit)
			if !tc.check(err) {
				t.Fatalf("Edit = %v", err)
			}
			if _, err := os.Stat(wsFile(p)); !os.IsNotExist(err) {
				t.Errorf("the workspace manifest was written: %v", err)
			}
			if after, _ := os.ReadFile(p.Approved()); string(after) != string(before) {
				t.Errorf("the approval changed: %q", after)
			}
		})
	}
}
