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

const good = "version: 1\nproject: p\nprofile: default\negress:\n  - a.example.com\n"

func project(t *testing.T) paths.Project {
	t.Helper()
	return paths.Project{Workspace: t.TempDir(), Hash: "h", Dir: t.TempDir()}
}

func parse(t *testing.T, raw string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(raw), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, p paths.Project)
		want    error  // nil: loads
		wantMsg string // in the error
	}{
		{"good", func(t *testing.T, p paths.Project) { write(t, p.Approved(), good) }, nil, ""},
		{"missing", func(*testing.T, paths.Project) {}, ErrNotApproved, "has not been approved"},
		{"corrupt", func(t *testing.T, p paths.Project) { write(t, p.Approved(), "version: [1\n\t:::") }, ErrCorrupt, "does not parse"},
		{"invalid", func(t *testing.T, p paths.Project) { write(t, p.Approved(), "version: 1\nproject: p\nbogus: 1\n") }, ErrCorrupt, "does not parse"},
		{"empty", func(t *testing.T, p paths.Project) { write(t, p.Approved(), "") }, ErrCorrupt, "does not parse"},
		{"symlinked to a good manifest", func(t *testing.T, p paths.Project) {
			target := filepath.Join(t.TempDir(), "elsewhere.yaml")
			write(t, target, good)
			if err := os.Symlink(target, p.Approved()); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt, "cannot be read"},
		{"dangling symlink", func(t *testing.T, p paths.Project) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), p.Approved()); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt, "cannot be read"},
		{"a directory", func(t *testing.T, p paths.Project) {
			if err := os.Mkdir(p.Approved(), 0o700); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt, "cannot be read"},
		{"too large", func(t *testing.T, p paths.Project) {
			write(t, p.Approved(), good+"# "+strings.Repeat("x", manifest.MaxSize)+"\n")
		}, ErrCorrupt, "cannot be read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := project(t)
			tc.setup(t, p)
			a, err := Load(p)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Load = %v, want the approval", err)
				}
				if string(a.Raw) != good || a.Manifest.Project != "p" {
					t.Errorf("Load = %q (project %q), want %q", a.Raw, a.Manifest.Project, good)
				}
				return
			}
			if a != nil || !errors.Is(err, tc.want) || !strings.Contains(fmtErr(err), tc.wantMsg) {
				t.Fatalf("Load = %v, %v; want nil and an error matching %v that says %q", a, err, tc.want, tc.wantMsg)
			}
			if errors.Is(err, ErrCorrupt) == errors.Is(err, ErrNotApproved) {
				t.Errorf("Load error %v matches both or neither of ErrCorrupt and ErrNotApproved", err)
			}
			var ce *CorruptError
			if errors.As(err, &ce) && ce.Path != p.Approved() {
				t.Errorf("CorruptError.Path = %q, want %q", ce.Path, p.Approved())
			}
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestRecordThenLoad(t *testing.T) {
	p := project(t)
	if err := Record(p, []byte(good)); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p.Approved())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("approved.yaml mode = %v, want 0600", st.Mode().Perm())
	}
	a, err := Load(p)
	if err != nil || string(a.Raw) != good {
		t.Fatalf("Load after Record = %v, %v; want %q", a, err, good)
	}
}

func TestCheck(t *testing.T) {
	p := project(t)
	write(t, p.Approved(), good)
	// comments and formatting do not count
	same := "# a comment\nversion: 1\nproject: p\nprofile: default\negress: [a.example.com]\n"
	if _, err := Check(p, parse(t, same), []byte(same)); err != nil {
		t.Errorf("Check of the same manifest reformatted = %v, want nil", err)
	}
	wider := good + "  - evil.example.net\n"
	a, err := Check(p, parse(t, wider), []byte(wider))
	var ce *ChangedError
	if !errors.As(err, &ce) || !strings.Contains(ce.Diff, "+   - evil.example.net") {
		t.Fatalf("Check of a widened manifest = %v, want a ChangedError whose diff adds evil.example.net", err)
	}
	if w := a.Widening(parse(t, wider)); len(w) != 1 || !strings.Contains(w[0], "evil.example.net") {
		t.Errorf("Widening = %q, want the new egress entry", w)
	}
	write(t, p.Approved(), "version: [1\n")
	if _, err := Check(p, parse(t, good), []byte(good)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check against a corrupt approval = %v, want ErrCorrupt", err)
	}
	os.Remove(p.Approved())
	if _, err := Check(p, parse(t, good), []byte(good)); !errors.Is(err, ErrNotApproved) {
		t.Errorf("Check without an approval = %v, want ErrNotApproved", err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestApproved: no approval is nil without an error; a good one is its manifest; a corrupt one
// is refused, never taken for none.
func TestApproved(t *testing.T) {
	p := project(t)
	if m, err := Approved(p); m != nil || err != nil {
		t.Fatalf("Approved(none) = %v, %v; want nil, nil", m, err)
	}
	write(t, p.Approved(), good)
	m, err := Approved(p)
	if err != nil || m == nil || m.Project != "p" {
		t.Fatalf("Approved(good) = %+v, %v; want project p", m, err)
	}
	write(t, p.Approved(), "version: [1\n\t:::")
	m, err = Approved(p)
	var ce *CorruptError
	if m != nil || !errors.As(err, &ce) {
		t.Fatalf("Approved(corrupt) = %v, %v; want nil and a *CorruptError", m, err)
	}
}

// TestReviewOf: the first approval and an unchanged manifest have nothing to review; a wider
// one lists how; a corrupt approval is reported, never taken for none.
func TestReviewOf(t *testing.T) {
	p := project(t)
	same := parse(t, good)
	if r, err := ReviewOf(p, same); err != nil || r.Corrupt != nil || r.Widening != nil {
		t.Errorf("ReviewOf(first) = %+v, %v; want nothing", r, err)
	}
	write(t, p.Approved(), good)
	if r, err := ReviewOf(p, same); err != nil || r.Corrupt != nil || len(r.Widening) != 0 {
		t.Errorf("ReviewOf(unchanged) = %+v, %v; want nothing", r, err)
	}
	wider := parse(t, good+"  - b.example.com\n")
	r, err := ReviewOf(p, wider)
	if err != nil || r.Corrupt != nil || len(r.Widening) != 1 || !strings.Contains(r.Widening[0], "b.example.com") {
		t.Errorf("ReviewOf(wider) = %+v, %v; want the new egress entry", r, err)
	}
	write(t, p.Approved(), "version: [1\n\t:::")
	r, err = ReviewOf(p, same)
	var ce *CorruptError
	if err != nil || !errors.As(r.Corrupt, &ce) || r.Widening != nil {
		t.Errorf("ReviewOf(corrupt) = %+v, %v; want the CorruptError", r, err)
	}
}
