package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSearchFindsPackages: the catalog's package entries apply at the top of every directory
// holding a package manifest or a makefile, however deep (F34), and its virtualenv entries in
// every directory holding pyvenv.cfg; the search enters neither .git nor node_modules, nor a
// symlinked directory, whose link is what is recorded.
func TestSearchFindsPackages(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	write(t, outside, map[string]string{"pkg/package.json": "{}", "pkg/Makefile": "all:"})
	write(t, ws, map[string]string{
		"packages/web/package.json":                         "{}",
		"packages/web/Makefile":                             "all:",
		"apps/a/b/c/d/e/pyproject.toml":                     "[project]",
		"apps/a/b/c/d/e/conftest.py":                        "",
		"apps/a/b/c/d/e/tox.ini":                            "",
		"crates/core/Cargo.toml":                            "[package]",
		"crates/core/build.rs":                              "fn main() {}",
		"tools/Makefile":                                    "all:",
		"tools/.claude/settings.json":                       "{}",
		"notapackage/Taskfile.yml":                          "", // no marker: not a package
		"notapackage/.claude/settings.json":                 "{}",
		"node_modules/dep/package.json":                     "{}",
		"node_modules/dep/Makefile":                         "all:",
		".git/modules/x/package.json":                       "{}",
		".git/modules/x/Makefile":                           "all:",
		"tox-envs/py312/pyvenv.cfg":                         "home = /usr/bin",
		"tox-envs/py312/lib/python3.12/site-packages/a.pth": "import os",
		"linked": "->" + filepath.Join(outside, "pkg"),
	})
	snap := Take(Scope{Workspace: ws})
	for _, want := range []string{"packages/web/package.json", "packages/web/Makefile", "apps/a/b/c/d/e/pyproject.toml",
		"apps/a/b/c/d/e/conftest.py", "apps/a/b/c/d/e/tox.ini", "crates/core/Cargo.toml", "crates/core/build.rs", "tools/Makefile",
		"tools/.claude/settings.json", "tox-envs/py312/pyvenv.cfg", "tox-envs/py312/lib/python3.12/site-packages/a.pth"} {
		if snap.Files[want] == "" {
			t.Errorf("%s is not in the snapshot", want)
		}
	}
	for _, not := range []string{"notapackage/Taskfile.yml", "notapackage/.claude/settings.json", "node_modules/dep/package.json",
		"node_modules/dep/Makefile", ".git/modules/x/package.json", "linked/package.json", "linked/Makefile"} {
		if fp, ok := snap.Files[not]; ok {
			t.Errorf("%s is in the snapshot (%q)", not, fp)
		}
	}
	if len(snap.Capped) != 0 {
		t.Errorf("capped %v, want none", snap.Capped)
	}
}

// TestSearchBoundsAreReported: a search that reaches one of its bounds — more packages than it
// takes, a directory nested deeper than it goes — says so in the snapshot's caps, under
// SearchName, and a bound hit after a run but not before is a change ([Compare]).
func TestSearchBoundsAreReported(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		plant        func(ws string)
	}{
		{"too many packages", fmt.Sprintf("more than %d packages and virtualenvs", MaxPackages), func(ws string) {
			files := map[string]string{}
			for i := 0; i <= MaxPackages; i++ {
				files[fmt.Sprintf("p/%04d/go.mod", i)] = "module x"
			}
			write(t, ws, files)
		}},
		{"too deep", fmt.Sprintf("is nested deeper than %d directories", MaxDepth), func(ws string) {
			write(t, ws, map[string]string{strings.Repeat("d/", MaxDepth+1) + "package.json": "{}"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			write(t, ws, map[string]string{"package.json": "{}"})
			before := Take(Scope{Workspace: ws})
			tc.plant(ws)
			after := Take(Scope{Workspace: ws})
			var got *Capped
			for i, c := range after.Capped {
				if c.Pattern == SearchName {
					got = &after.Capped[i]
				}
			}
			if got == nil || !strings.Contains(got.Reason, tc.reason) {
				t.Fatalf("caps %v, want %s: %s", after.Capped, SearchName, tc.reason)
			}
			found := false
			for _, c := range Compare(before, after) {
				found = found || (c.Area == AreaCap && c.Name == SearchName)
			}
			if !found {
				t.Errorf("Compare does not report the search's new bound: %v", Compare(before, after))
			}
		})
	}
}

// TestSearchListsHiddenDirectories: what the catalog does not know at the root, at the top of
// a package and in a directory between the two is listed — a directory whose name starts with a
// dot that the catalog names nothing in, an entry of a hidden directory it knows for something
// else (.github/prompts/ beside .github/workflows/), a hidden file no entry names —, and one
// that appears between two snapshots is a change, "new hidden directory: .foo/", "new hidden
// file: .bar"; the catalog's own (.claude, .vscode, .babelrc, .github/workflows), .git, an inert
// hidden file (.gitignore), what a listed directory holds and what lies deeper in a package
// are not.
func TestSearchListsHiddenDirectories(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{"package.json": "{}", "web/package.json": "{}", ".old/x": "", ".git/HEAD": "ref: refs/heads/main",
		"libs/a/Cargo.toml": "[package]", ".github/workflows/ci.yml": "", ".github/CODEOWNERS": ""})
	before := Take(Scope{Workspace: ws})
	write(t, ws, map[string]string{
		".foo/run.sh": "", "web/.bar/x": "", ".claude/x": "", ".vscode/x": "", ".hiddenfile": "", "web/src/.baz/x": "", "lib/.qux/x": "",
		".babelrc": "{}", ".gitignore": "x", "web/.gitignore": "x", ".old/new": "", "libs/.tool/x": "", "libs/.windsurfrules": "",
		".github/prompts/a.prompt.md": "", ".github/ISSUE_TEMPLATE/bug.md": "", ".github/workflows/new.yml": "", "web/.aider.conf.yml": "",
	})
	if err := os.MkdirAll(filepath.Join(ws, ".empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	after := Take(Scope{Workspace: ws})
	if diff := cmp.Diff([]string{".empty/", ".foo/", ".github/CODEOWNERS", ".github/ISSUE_TEMPLATE/", ".hiddenfile", ".old/", "libs/.tool/", "web/.bar/"}, after.Hidden); diff != "" {
		t.Errorf("Hidden (-want +got):\n%s", diff)
	}
	var got []string
	for _, c := range Compare(before, after) {
		if c.Area == AreaHidden {
			got = append(got, c.String())
		}
	}
	want := []string{"new hidden directory: .empty/", "new hidden directory: .foo/", "new hidden directory: .github/ISSUE_TEMPLATE/",
		"new hidden file: .hiddenfile", "new hidden directory: libs/.tool/", "new hidden directory: web/.bar/"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare's hidden directories and files (-want +got):\n%s", diff)
	}
	if s := Summarize(NewHidden(before.Hidden, after.Hidden), 8); s != "new hidden directory: .empty/, .foo/, .github/ISSUE_TEMPLATE/, libs/.tool/, web/.bar/; new hidden file: .hiddenfile" {
		t.Errorf("Summarize = %q", s)
	}
	if again := NewHidden(after.Hidden, Take(Scope{Workspace: ws}).Hidden); len(again) != 0 {
		t.Errorf("a hidden directory already there is new again: %v", again)
	}
	for _, named := range []string{".github/prompts/a.prompt.md", "libs/.windsurfrules", "web/.aider.conf.yml", ".babelrc"} {
		if after.Files[named] == "" {
			t.Errorf("%s, which the catalog names, is not in the snapshot", named)
		}
	}
}

// TestVenvPthImportsAreWatched: the modules a virtualenv's .pth files import at every start of
// its python — _virtualenv.py, a package such as _distutils_hack/, an editable install's finder,
// one named by __import__ — are watched, with a bytecode file python would load in place of the
// source; a .pth line that does not start with import (a path) names nothing, and a module of
// the same name elsewhere is not watched.
func TestVenvPthImportsAreWatched(t *testing.T) {
	ws := t.TempDir()
	sp := ".venv/lib/python3.11/site-packages/"
	write(t, ws, map[string]string{
		".venv/pyvenv.cfg":                             "home = /usr/bin\n",
		sp + "_virtualenv.pth":                         "import _virtualenv\n",
		sp + "_virtualenv.py":                          "# patches\n",
		sp + "hack.pth":                                "import os; var = 'X'; os.environ.get(var) and __import__('myhack').add_shim();\n",
		sp + "myhack/__init__.py":                      "",
		sp + "myhack/override.py":                      "",
		sp + "__editable__.x-1.0.pth":                  "import __editable___x_1_0_finder; __editable___x_1_0_finder.install()\n",
		sp + "__editable___x_1_0_finder.py":            "",
		sp + "paths.pth":                               "/workspace/src\nnotimported\n",
		sp + "notimported.py":                          "",
		sp + "__pycache__/_virtualenv.cpython-311.pyc": "bytecode",
		"lib/_virtualenv.py":                           "",
	})
	snap := Take(Scope{Workspace: ws})
	for _, want := range []string{"_virtualenv.py", "myhack/__init__.py", "myhack/override.py", "__editable___x_1_0_finder.py", "__pycache__/_virtualenv.cpython-311.pyc"} {
		if snap.Files[sp+want] == "" {
			t.Errorf("%s is not watched", sp+want)
		}
	}
	for _, not := range []string{sp + "notimported.py", "lib/_virtualenv.py"} {
		if snap.Files[not] != "" {
			t.Errorf("%s is watched", not)
		}
	}
	write(t, ws, map[string]string{sp + "myhack/override.py": "import os; os.system('sh evil.sh')\n"})
	var got []string
	for _, c := range DiffFiles(snap.Files, Take(Scope{Workspace: ws}).Files) {
		got = append(got, c.Name)
	}
	if strings.Join(got, " ") != sp+"myhack/override.py" {
		t.Errorf("changes = %v, want the module __import__ names", got)
	}
	if mods, more := pthModules("import a.b as c, d\nimport\te; __import__(\"f.g\")\n# import h\nimport_module('i')\n"); strings.Join(mods, " ") != "a d e f" || more {
		t.Errorf("pthModules = %v %v", mods, more)
	}
}
