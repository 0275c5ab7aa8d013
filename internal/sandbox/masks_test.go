package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
)

// ws is a workspace under construction for a test.
type ws struct {
	t   *testing.T
	dir string
}

func newWS(t *testing.T) *ws {
	t.Helper()
	return &ws{t: t, dir: filepath.Join(t.TempDir(), "ws")}
}

// file writes rel with data, making its parents.
func (w *ws) file(rel, data string) *ws {
	w.t.Helper()
	p := filepath.Join(w.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return w
}

func (w *ws) mkdir(rel string) *ws {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Join(w.dir, rel), 0o755); err != nil {
		w.t.Fatal(err)
	}
	return w
}

func (w *ws) symlink(target, rel string) *ws {
	w.t.Helper()
	if err := os.Symlink(target, filepath.Join(w.dir, rel)); err != nil {
		w.t.Fatal(err)
	}
	return w
}

func (w *ws) mv(from, to string) *ws {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(w.dir, to)), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(w.dir, from), filepath.Join(w.dir, to)); err != nil {
		w.t.Fatal(err)
	}
	return w
}

func (w *ws) link(from, to string) *ws {
	w.t.Helper()
	w.mkdir(filepath.Dir(to))
	if err := os.Link(filepath.Join(w.dir, from), filepath.Join(w.dir, to)); err != nil {
		w.t.Fatal(err)
	}
	return w
}

func (w *ws) rm(rel string) *ws {
	w.t.Helper()
	if err := os.RemoveAll(filepath.Join(w.dir, rel)); err != nil {
		w.t.Fatal(err)
	}
	return w
}

func (w *ws) find(patterns []string, rec *MaskRecord) (*MaskSet, error) {
	return FindMasks(w.dir, patterns, rec, 0)
}

func (w *ws) mustFind(patterns []string, rec *MaskRecord) *MaskSet {
	w.t.Helper()
	s, err := w.find(patterns, rec)
	if err != nil {
		w.t.Fatalf("FindMasks: %v", err)
	}
	return s
}

// got is a mask as the tests compare it: "path reason origin", with a trailing slash on
// directories.
func got(s *MaskSet) []string {
	var out []string
	for _, m := range s.Masks {
		p := m.Path
		if m.Dir {
			p += "/"
		}
		out = append(out, p+" "+m.Reason+" "+m.Origin)
	}
	return out
}

// TestFindMasksPatterns: a pattern without a slash matches a name at any depth, one with a
// slash is anchored, a trailing slash matches directories only; symlinks and missing paths are
// never masked; a masked directory is one mount; literal paths that do not exist are watched.
func TestFindMasksPatterns(t *testing.T) {
	w := newWS(t).file(".env", "x").file("sub/deep/.env.local", "x").file("secrets/key.pem", "x").
		file("secrets/.env", "x").file("other/secrets", "a file, not a directory").
		file("config/credentials.json", "x").file("deep/config/credentials.json", "not anchored here").
		file("visible.txt", "x")
	w.symlink(".env", "link-env")
	s := w.mustFind([]string{".env*", "secrets/", "config/credentials.json", "absent.key", ".git/hooks"}, nil)
	want := []string{".env pattern .env", "config/credentials.json pattern config/credentials.json",
		"secrets/ pattern secrets", "sub/deep/.env.local pattern sub/deep/.env.local"}
	if diff := cmp.Diff(want, got(s)); diff != "" {
		t.Errorf("masks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{".git/hooks"}, s.Absent); diff != "" {
		t.Errorf("Absent (-want +got):\n%s", diff)
	}
	mounts := s.Mounts("/e", "/e.d")
	if len(mounts) != 4 || mounts[2].Source != "/e.d" || mounts[0].Source != "/e" || !mounts[0].ReadOnly ||
		mounts[0].Target != "/workspace/.env" {
		t.Errorf("Mounts = %+v", mounts)
	}
}

// TestFindMasksFollowsContent: content masked at one run stays masked at the next wherever it
// was moved, renamed or hard-linked in between, and as long as it stays in the workspace.
func TestFindMasksFollowsContent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(*ws)
		patterns []string
		between  func(*ws)
		want     []string
	}{
		{
			name:     "moved parent directory",
			setup:    func(w *ws) { w.file("config/master.key", "k") },
			patterns: []string{"config/master.key"},
			between:  func(w *ws) { w.mv("config", "config.moved") },
			want:     []string{"config.moved/master.key moved config/master.key"},
		},
		{
			name:     "renamed file",
			setup:    func(w *ws) { w.file(".env", "k") },
			patterns: []string{".env"},
			between:  func(w *ws) { w.mv(".env", "notes/env.txt") },
			want:     []string{"notes/env.txt moved .env"},
		},
		{
			name:     "renamed directory",
			setup:    func(w *ws) { w.file("secrets/key.pem", "k") },
			patterns: []string{"secrets/"},
			between:  func(w *ws) { w.mv("secrets", "vault") },
			want:     []string{"vault/ moved secrets"},
		},
		{
			name:     "hard link made on the host",
			setup:    func(w *ws) { w.file(".env", "k") },
			patterns: []string{".env"},
			between:  func(w *ws) { w.link(".env", "sub/copy") },
			want:     []string{".env pattern .env", "sub/copy link .env"},
		},
		{
			name:     "hard link there from the start",
			setup:    func(w *ws) { w.file(".env", "k").link(".env", "sub/copy") },
			patterns: []string{".env"},
			between:  func(*ws) {},
			want:     []string{".env pattern .env", "sub/copy link .env"},
		},
		{
			name:     "hard link of a file in a masked directory",
			setup:    func(w *ws) { w.file("secrets/key.pem", "k") },
			patterns: []string{"secrets/"},
			between:  func(w *ws) { w.link("secrets/key.pem", "stolen.pem") },
			want:     []string{"secrets/ pattern secrets", "stolen.pem link secrets/key.pem"},
		},
		{
			name:     "moved, then hard-linked",
			setup:    func(w *ws) { w.file("config/master.key", "k") },
			patterns: []string{"config/master.key"},
			between:  func(w *ws) { w.mv("config", "c2").link("c2/master.key", "k2") },
			want:     []string{"c2/master.key moved config/master.key", "k2 link c2/master.key"},
		},
		{
			name:     "moved back under its pattern",
			setup:    func(w *ws) { w.file("config/master.key", "k") },
			patterns: []string{"config/master.key"},
			between:  func(w *ws) { w.mv("config", "c2").mv("c2", "config") },
			want:     []string{"config/master.key pattern config/master.key"},
		},
		{
			name:     "unmasked by the user: not followed",
			setup:    func(w *ws) { w.file("config/master.key", "k") },
			patterns: []string{"config/master.key"},
			between:  func(w *ws) { w.mv("config", "c2") },
			want:     nil, // the next walk below drops the pattern
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWS(t)
			tc.setup(w)
			first := w.mustFind(tc.patterns, nil)
			tc.between(w)
			patterns := tc.patterns
			if tc.want == nil {
				patterns = []string{"other"}
			}
			second := w.mustFind(patterns, first.Record())
			if diff := cmp.Diff(tc.want, got(second)); diff != "" {
				t.Errorf("masks after the change (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFindMasksLinksOnTheFirstWalk: a walk with no record of earlier runs masks every link of
// masked content itself. (TestFindMasksFollowsContent looks only at the walk after the record,
// which masks a recorded inode wherever it is, and would not see this walk miss the link.)
func TestFindMasksLinksOnTheFirstWalk(t *testing.T) {
	w := newWS(t).file(".env", "k").link(".env", "sub/copy").file("secrets/key.pem", "k").link("secrets/key.pem", "stolen.pem")
	s := w.mustFind([]string{".env", "secrets/"}, nil)
	want := []string{".env pattern .env", "secrets/ pattern secrets", "stolen.pem link secrets/key.pem", "sub/copy link .env"}
	if diff := cmp.Diff(want, got(s)); diff != "" {
		t.Errorf("masks of the first walk (-want +got):\n%s", diff)
	}
}

// TestFindMasksFollowsAcrossRuns: the record written at each run keeps following content that
// moves again, and forgets content that left the workspace.
func TestFindMasksFollowsAcrossRuns(t *testing.T) {
	w := newWS(t).file("config/master.key", "k")
	pats := []string{"config/master.key"}
	rec := w.mustFind(pats, nil).Record()
	w.mv("config", "a")
	rec = w.mustFind(pats, rec).Record()
	w.mv("a", "b/c")
	s := w.mustFind(pats, rec)
	if diff := cmp.Diff([]string{"b/c/master.key moved config/master.key"}, got(s)); diff != "" {
		t.Errorf("after two moves (-want +got):\n%s", diff)
	}
	w.rm("b")
	if r := w.mustFind(pats, s.Record()).Record(); len(r.Entries) != 0 {
		t.Errorf("record after the content was removed = %+v, want it empty", r.Entries)
	}
}

// TestFindMasksTypeMustMatch: recorded content is matched by inode and type, so a directory
// that took a masked file's inode number is not mistaken for it.
func TestFindMasksTypeMustMatch(t *testing.T) {
	w := newWS(t).mkdir("d")
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(w.dir, "d"), &st); err != nil {
		t.Fatal(err)
	}
	rec := &MaskRecord{Version: maskRecordVersion, Entries: []RecordEntry{{Ino: st.Ino, Pattern: ".env", Origin: ".env"}}}
	if s := w.mustFind([]string{".env"}, rec); len(s.Masks) != 0 {
		t.Errorf("masks = %v, want none: the record is of a file", got(s))
	}
	rec.Entries[0].Dir = true
	if s := w.mustFind([]string{".env"}, rec); len(s.Masks) != 1 {
		t.Errorf("masks = %v, want the directory", got(s))
	}
}

// TestFindMasksRefuses: a walk that cannot see everything, or masked content with links it
// cannot see, is refused with a MaskError that names the cause and carries a hint.
func TestFindMasksRefuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(*ws)
		patterns []string
		limit    int
		want     []string // substrings of the error
	}{
		{
			name: "more entries than the limit",
			setup: func(w *ws) {
				w.file(".env", "k")
				for i := range 1200 {
					w.file(fmt.Sprintf("aaa/f%04d", i), "")
				}
			},
			patterns: []string{".env*"}, limit: 1000,
			want: []string{"more than 1000 entries", "1200 of them in aaa", "limits.mask_walk"},
		},
		{
			name: "too deep",
			setup: func(w *ws) {
				w.mkdir(strings.Repeat("d/", MaxMaskDepth+1))
			},
			patterns: []string{".env*"},
			want:     []string{"nested deeper than 256"},
		},
		{
			name: "a masked file linked outside the workspace",
			setup: func(w *ws) {
				w.file(".env", "k")
				if err := os.Link(filepath.Join(w.dir, ".env"), filepath.Join(filepath.Dir(w.dir), "outside")); err != nil {
					w.t.Fatal(err)
				}
			},
			patterns: []string{".env"},
			want:     []string{"masked .env has 2 hard links but only 1 are in the workspace"},
		},
		{
			name: "a file in a masked directory linked outside the workspace",
			setup: func(w *ws) {
				w.file("secrets/key.pem", "k")
				if err := os.Link(filepath.Join(w.dir, "secrets/key.pem"), filepath.Join(filepath.Dir(w.dir), "outside")); err != nil {
					w.t.Fatal(err)
				}
			},
			patterns: []string{"secrets/"},
			want:     []string{"masked secrets/key.pem has 2 hard links"},
		},
		{
			name: "a masked file under a name with CR LF",
			setup: func(w *ws) {
				w.file("app\r\n/.env", "k")
			},
			patterns: []string{".env*"},
			want:     []string{`masked app\r\n/.env cannot be mounted where it is`, "CR LF as LF"},
		},
		{
			name: "a masked symlink to a directory that holds another mask",
			setup: func(w *ws) {
				w.file(".git/hooks/pre-commit.sample", "")
				if err := os.Symlink(".git", filepath.Join(w.dir, ".env.git")); err != nil {
					w.t.Fatal(err)
				}
			},
			patterns: []string{".env*", ".git/hooks"},
			want:     []string{"masked .env.git leads to the directory .git, which holds masked .git/hooks"},
		},
		{
			name: "more masks than abox mounts",
			setup: func(w *ws) {
				for i := range MaxMasks + 1 {
					w.file(fmt.Sprintf(".env%d", i), "")
				}
			},
			patterns: []string{".env*"},
			want:     []string{"more than the 1000 abox mounts", `".env*" matches 1001`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWS(t)
			tc.setup(w)
			_, err := FindMasks(w.dir, tc.patterns, nil, tc.limit)
			var me *MaskError
			if !errors.As(err, &me) || me.Hint == "" {
				t.Fatalf("FindMasks = %v, want a MaskError with a hint", err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error()+" ↳ "+me.Hint, s) {
					t.Errorf("error %q (hint %q) lacks %q", err, me.Hint, s)
				}
			}
		})
	}
}

// TestFindMasksUnreadableDirectory: a directory abox cannot read refuses the walk. As root,
// which reads anything, the walk runs again in a child process as nobody.
func TestFindMasksUnreadableDirectory(t *testing.T) {
	if dir := os.Getenv("ABOX_TEST_UNREADABLE_WS"); dir != "" {
		_, err := FindMasks(dir, []string{".env*"}, nil, 0)
		fmt.Printf("walk: %v\n", err)
		return
	}
	parent := t.TempDir()
	os.Chmod(parent, 0o755)
	os.Chmod(filepath.Dir(parent), 0o755)
	w := &ws{t: t, dir: filepath.Join(parent, "ws")}
	w.file("locked/.env", "k").file("open.txt", "x")
	os.Chmod(w.dir, 0o755)
	if err := os.Chmod(filepath.Join(w.dir, "locked"), 0o000); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(w.dir, "locked"), 0o755)
	var out string
	if os.Geteuid() != 0 {
		_, err := FindMasks(w.dir, []string{".env*"}, nil, 0)
		out = fmt.Sprintf("walk: %v\n", err)
	} else {
		bin := filepath.Join(parent, "sandbox.test") // the build directory is not nobody's to enter
		data, err := os.ReadFile(os.Args[0])
		if err != nil || os.WriteFile(bin, data, 0o755) != nil {
			t.Fatalf("copying the test binary: %v", err)
		}
		// Under -cover the child writes coverage data: to a directory nobody may write, not the
		// build's (its counts are not merged; the parent's are).
		cov := filepath.Join(parent, "cover")
		if err := os.Mkdir(cov, 0o777); err != nil || os.Chmod(cov, 0o777) != nil {
			t.Fatalf("making the child's coverage directory: %v", err)
		}
		args := []string{"-test.run=^TestFindMasksUnreadableDirectory$"}
		if testing.CoverMode() != "" {
			args = append(args, "-test.gocoverdir="+cov)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "ABOX_TEST_UNREADABLE_WS="+w.dir, "TMPDIR="+cov, "GOCOVERDIR="+cov)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the walk as nobody: %v\n%s", err, b)
		}
		out = string(b)
	}
	if !strings.Contains(out, "walk: cannot read locked: permission denied") {
		t.Errorf("the walk over an unreadable directory said:\n%s\nwant a refusal naming it", out)
	}
}

// TestMaskRecordRoundTrip: the record is written atomically, private, and read back; one that
// does not decode refuses.
func TestMaskRecordRoundTrip(t *testing.T) {
	w := newWS(t).file(".env", "k").file("secrets/a", "x")
	s := w.mustFind([]string{".env", "secrets/"}, nil)
	path := filepath.Join(t.TempDir(), "state", "masked.json")
	if err := SaveMaskRecord(path, s.Record()); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("masked.json: %v, %v; want mode 0600", st, err)
	}
	back, err := LoadMaskRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Record(), back); diff != "" {
		t.Errorf("record read back (-want +got):\n%s", diff)
	}
	os.WriteFile(path, []byte("{"), 0o600)
	var me *MaskError
	if _, err := LoadMaskRecord(path); !errors.As(err, &me) || me.Hint == "" {
		t.Errorf("LoadMaskRecord(corrupt) = %v, want a MaskError with a hint", err)
	}
	if r, err := LoadMaskRecord(filepath.Join(t.TempDir(), "missing")); err != nil || len(r.Entries) != 0 {
		t.Errorf("LoadMaskRecord(missing) = %+v, %v, want an empty record", r, err)
	}
}

// TestDefaultMaskWalk: config.yaml's default is the sandbox's.
func TestDefaultMaskWalk(t *testing.T) {
	if config.DefaultMaskWalk != MaxMaskWalk || config.Default().Limits.MaskWalk != MaxMaskWalk {
		t.Errorf("config.DefaultMaskWalk = %d, want MaxMaskWalk %d", config.DefaultMaskWalk, MaxMaskWalk)
	}
}

func TestFindMasksMasksWhereAMaskedSymlinkLeads(t *testing.T) {
	dir := t.TempDir()
	for rel, data := range map[string]string{"config/app.env": "k", "Makefile": "all:\n"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{".env": "config/app.env", ".env.out": "../elsewhere", ".env.make": "Makefile", ".env.root": "."} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	set, err := FindMasks(dir, []string{".env*"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range set.Masks {
		got[m.Path] = m.String()
	}
	want := map[string]string{
		"config/app.env": "config/app.env (where masked .env leads)",
		"Makefile":       "Makefile (where masked .env.make leads)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("masks (-want +got):\n%s", diff)
	}
	scope := WatchScope(dir, "", []string{"Makefile"}, []string{".env*"})
	if scope.Masked("Makefile") {
		t.Error("a file masked as a symlink's target left the watch: a planted link would hide it from doctor")
	}
}

func TestFindMasksResolvesALiteralPathThroughALinkedDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "shared/config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shared/config/master.key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("shared/config", filepath.Join(dir, "config")); err != nil {
		t.Fatal(err)
	}
	set, err := FindMasks(dir, []string{"config/master.key", "config/absent.key"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Masks) != 1 || set.Masks[0].Path != "shared/config/master.key" || set.Masks[0].Reason != ByTarget {
		t.Errorf("masks = %+v, want shared/config/master.key, where config/master.key leads", set.Masks)
	}
}
