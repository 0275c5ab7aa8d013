package isolate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffFlagsGitDirectories: the agent lays out repositories in its clone as ordinary files —
// a bare one under tests/fixtures with core.fsmonitor and a hook, one whose HEAD is a link and
// whose objects and refs come from a commondir, and a HEAD added to a directory whose objects
// and refs the user's repository already holds — beside look-alikes git would not take for a
// repository. Diff marks every file of the three, and only those, as in a git directory,
// `abox diff` shows them "✖", and Merge refuses them without force.
func TestDiffFlagsGitDirectories(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.ws, "fixtures/old.git/objects/.keep"), "")
	writeFile(t, filepath.Join(f.ws, "fixtures/old.git/refs/.keep"), "")
	f.git(f.ws, "add", ".")
	f.git(f.ws, "commit", "--quiet", "-m", "fixtures")
	f.create("gd", CreateOptions{})
	clone := f.repo.Project.Clone("gd")
	for name, data := range map[string]string{
		"tests/fixtures/sample.git/HEAD":               "ref: refs/heads/main\n",
		"tests/fixtures/sample.git/config":             "[core]\n\tbare = false\n\tfsmonitor = /workspace/evil.sh\n",
		"tests/fixtures/sample.git/objects/pack/.keep": "",
		"tests/fixtures/sample.git/refs/heads/.keep":   "",
		"tests/fixtures/sample.git/hooks/pre-receive":  "#!/bin/sh\n",
		"vendor/dep.git/commondir":                     "../../tests/fixtures/sample.git\n",
		"vendor/dep.git/config.worktree":               "[core]\n\tsshCommand = evil\n",
		"fixtures/old.git/HEAD":                        strings.Repeat("0", 40) + "\n",
		"docs/notrepo.git/HEAD":                        "not a ref\n",
		"docs/notrepo.git/objects/x":                   "",
		"docs/notrepo.git/refs/x":                      "",
		"docs/norefs.git/HEAD":                         "ref: refs/heads/main\n",
		"docs/norefs.git/objects/x":                    "",
		"notes.txt":                                    "work\n",
	} {
		writeFile(t, filepath.Join(clone, name), data)
	}
	if err := os.Symlink("refs/heads/main", filepath.Join(clone, "vendor/dep.git/HEAD")); err != nil {
		t.Fatal(err)
	}
	f.collect("gd")
	d, err := f.repo.Diff(context.Background(), "gd", false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"tests/fixtures/sample.git/HEAD":               "tests/fixtures/sample.git",
		"tests/fixtures/sample.git/config":             "tests/fixtures/sample.git",
		"tests/fixtures/sample.git/objects/pack/.keep": "tests/fixtures/sample.git",
		"tests/fixtures/sample.git/refs/heads/.keep":   "tests/fixtures/sample.git",
		"tests/fixtures/sample.git/hooks/pre-receive":  "tests/fixtures/sample.git",
		"vendor/dep.git/HEAD":                          "vendor/dep.git",
		"vendor/dep.git/commondir":                     "vendor/dep.git",
		"vendor/dep.git/config.worktree":               "vendor/dep.git",
		"fixtures/old.git/HEAD":                        "fixtures/old.git",
	}
	for _, file := range d.Files {
		if file.GitDir != want[file.Path] || (file.GitDir != "") != (file.Exec && file.Flagged()) {
			t.Errorf("%s: GitDir %q, exec %v, flagged %v; want %q", file.Path, file.GitDir, file.Exec, file.Flagged(), want[file.Path])
		}
		delete(want, file.Path)
	}
	if len(want) > 0 {
		t.Errorf("not in the diff: %v", want)
	}
	var text bytes.Buffer
	d.WriteText(&text)
	if !strings.Contains(text.String(), "✖ A tests/fixtures/sample.git/config  (execution-adjacent; in tests/fixtures/sample.git, a git directory") {
		t.Errorf("abox diff does not mark the git directory's files:\n%s", text.String())
	}
	_, err = f.repo.Merge(context.Background(), "gd", MergeOptions{})
	if err == nil || !strings.Contains(err.Error(), "tests/fixtures/sample.git/config (in tests/fixtures/sample.git, a git directory to git)") {
		t.Fatalf("Merge = %v, want a refusal naming the git directory's files", err)
	}
	if exists(filepath.Join(f.ws, "tests")) {
		t.Fatal("a refused merge brought the git directory")
	}
	if _, err := f.repo.Merge(context.Background(), "gd", MergeOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(f.ws, "tests/fixtures/sample.git/HEAD")) {
		t.Error("a forced merge left the git directory out")
	}
}
