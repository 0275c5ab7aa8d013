package isolate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffMarksTheCatalog: a branch brings, at its root and in a workspace package, what issue
// 34's attack left for the host's tools — files of the catalog, a virtualenv's .pth and
// interpreter (the user's own .venv, which git ignores and a merge overwrites), a file in a
// hidden directory the catalog does not know — beside ordinary files. Diff marks each of the
// first, and none of the rest, execution-adjacent with what runs it, and `abox diff` shows
// them "!".
func TestDiffMarksTheCatalog(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.ws, ".venv/pyvenv.cfg"), "home = /usr/bin\n") // untracked, the user's
	f.create("cat", CreateOptions{})
	clone := f.repo.Project.Clone("cat")
	marked := map[string]string{
		".cargo/config.toml":                          "cargo",
		"packages/web/.cargo/config.toml":             "cargo",
		".venv/lib/python3.12/site-packages/evil.pth": "the virtualenv's python",
		".venv/bin/python":                            "the virtualenv's scripts",
		"tools/py/lib/python3.12/site-packages/x.pth": "the virtualenv's python",
		"lefthook.yml":                                "lefthook",
		"Taskfile.yml":                                "Task",
		"mise.toml":                                   "mise, asdf",
		".tool-versions":                              "mise, asdf",
		"tests/conftest.py":                           "pytest",
		"tox.ini":                                     "tox, nox, Pipenv",
		".mvn/extensions.xml":                         "Maven",
		"gradle/wrapper/gradle-wrapper.properties":    "Gradle",
		"CMakePresets.json":                           "CMake",
		".lfsconfig":                                  "Git LFS",
		".gitmodules":                                 "git submodule",
		".vscode/extensions.json":                     "VS Code (and Cursor, its fork)",
		".cursor/mcp.json":                            "Gemini CLI, Cursor, Codex CLI",
		".gemini/settings.json":                       "Gemini CLI, Cursor, Codex CLI",
		"CLAUDE.local.md":                             "Claude Code",
		"docs/AGENTS.md":                              "Codex, Cursor, Gemini CLI and other agents",
		".foo/run.sh":                                 "in .foo/, a hidden directory the catalog does not know",
		".hidden-tool.json":                           "a hidden file the catalog does not know",
		".github/ISSUE_TEMPLATE/bug.md":               "in .github/, beside what the catalog knows there",
	}
	files := map[string]string{
		"tools/py/pyvenv.cfg": "home = /usr/bin\n", "src/main.go": "package main\n", "docs/guide.md": "x\n", ".gitignore": "x\n",
		"vendor/x/.github/workflows/ci.yml": "on: push\n", // CI reads the root's only
	}
	for name := range marked {
		files[name] = "sh evil.sh\n"
	}
	for name, data := range files {
		writeFile(t, filepath.Join(clone, name), data)
	}
	f.collect("cat")
	d, err := f.repo.Diff(context.Background(), "cat", false)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, file := range d.Files {
		want, ok := marked[file.Path]
		if !ok && file.Path == "tools/py/pyvenv.cfg" {
			want, ok = "the virtualenv's python", true
		}
		if file.Exec != ok || file.Why != want {
			t.Errorf("%s: exec %v, why %q; want %v, %q", file.Path, file.Exec, file.Why, ok, want)
		}
		if ok {
			seen++
		}
	}
	if seen != len(marked)+1 {
		t.Errorf("%d marked files in the diff, want %d: %+v", seen, len(marked)+1, d.Files)
	}
	var text bytes.Buffer
	d.WriteText(&text)
	if !strings.Contains(text.String(), "! A .cargo/config.toml  (execution-adjacent: cargo)") {
		t.Errorf("abox diff does not mark .cargo/config.toml:\n%s", text.String())
	}
}

// TestDiffMarksFilesReachedThroughLinks: the user's tree keeps Claude Code's settings in a
// directory of its own, linked as .claude (.claude -> tools/claude), and its Makefile is a link
// to build/rules.txt; a branch that rewrites the files they lead to, and one that adds a link of
// its own to a directory of the branch (.github -> ci/github), has each file marked with the
// path the host's tool reads it by. A file beside them that no link brings under a covered path
// is not marked.
func TestDiffMarksFilesReachedThroughLinks(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.ws, "tools/claude/settings.json"), "{}\n")
	writeFile(t, filepath.Join(f.ws, "build/rules.txt"), "all:\n")
	for link, target := range map[string]string{".claude": "tools/claude", "Makefile": "build/rules.txt"} {
		if err := os.Symlink(target, filepath.Join(f.ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	f.git(f.ws, "add", "--all")
	f.git(f.ws, "commit", "--quiet", "-m", "links")
	f.create("links", CreateOptions{})
	clone := f.repo.Project.Clone("links")
	for name, data := range map[string]string{
		"tools/claude/settings.json": `{"hooks": {"SessionStart": []}}`,
		"build/rules.txt":            "all:\n\tsh evil.sh\n",
		"ci/github/workflows/ci.yml": "on: push\n",
		"tools/claude/notes/readme":  "x\n",
		"build/other.txt":            "x\n",
	} {
		writeFile(t, filepath.Join(clone, name), data)
	}
	if err := os.Symlink("ci/github", filepath.Join(clone, ".github")); err != nil {
		t.Fatal(err)
	}
	f.collect("links")
	d, err := f.repo.Diff(context.Background(), "links", false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"tools/claude/settings.json": "Claude Code, as .claude/settings.json through the symlink .claude",
		"tools/claude/notes/readme":  "Claude Code, as .claude/notes/readme through the symlink .claude",
		"build/rules.txt":            "make, as Makefile through the symlink Makefile",
		"ci/github/workflows/ci.yml": "GitHub Actions, as .github/workflows/ci.yml through the symlink .github",
		"build/other.txt":            "",
	}
	for _, file := range d.Files {
		w, ok := want[file.Path]
		if !ok {
			continue
		}
		if file.Why != w || file.Exec != (w != "") {
			t.Errorf("%s: exec %v, why %q; want %q", file.Path, file.Exec, file.Why, w)
		}
		delete(want, file.Path)
	}
	if len(want) > 0 {
		t.Errorf("not in the diff: %v", want)
	}
}
