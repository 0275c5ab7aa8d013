package watch

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// classes are the catalog's classes: the toolchains (catalog_toolchains_test.go holds them to
// manifest.Toolchains) and the rest.
var classes = []string{"python", "go", "node", "rust", "java", "ruby", "php", "dotnet",
	"build", "ci", "git", "editor", "agent", "shell", "infra", "abox"}

// TestCatalogIsWellFormed: every entry has a valid pattern, a class, a tool, a time and a
// reason; a name read in every directory is one name; no pattern is listed twice for one reach.
func TestCatalogIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Catalog() {
		key := e.Reach.String() + " " + e.Pattern
		switch {
		case !validPattern(e.Pattern):
			t.Errorf("%s: not a valid pattern", key)
		case e.Tool == "" || e.When == "" || e.Why == "":
			t.Errorf("%s: tool %q, when %q, why %q: each must say something", key, e.Tool, e.When, e.Why)
		case !slices.Contains(classes, e.Class):
			t.Errorf("%s: class %q is not one of %v", key, e.Class, classes)
		case e.Reach == InEveryDir && strings.Contains(e.Pattern, "/"):
			t.Errorf("%s: a name read in every directory has one segment", key)
		case seen[key]:
			t.Errorf("%s: listed twice", key)
		}
		seen[key] = true
	}
	for _, m := range Markers {
		if _, err := path.Match(m, ""); err != nil || strings.Contains(m, "/") {
			t.Errorf("marker %q: want one name or glob", m)
		}
	}
}

// TestCatalogWatchesWhatRunsOnTheHost: what issue 34's attack planted for the host's tools,
// class by class — at the workspace root, and at the top of a workspace package (F34) or in
// a virtualenv where the tool reads it there — is an added file of the next snapshot, with the
// tool that runs it.
func TestCatalogWatchesWhatRunsOnTheHost(t *testing.T) {
	for _, tc := range []struct {
		class string
		plant []string
	}{
		{"ci", []string{".github/workflows/ci.yml", ".gitlab-ci.yml", ".circleci/config.yml"}},
		{"git", []string{".gitmodules", ".lfsconfig", ".gitattributes", "packages/web/src/.gitattributes", ".git/info/attributes",
			".git/info/exclude", ".githooks/pre-commit", ".husky/pre-commit", ".pre-commit-config.yaml", "lefthook.yml"}},
		{"build", []string{"GNUmakefile", "makefile", "Justfile", ".justfile", "rules.mk", "Taskfile.yml", "CMakePresets.json",
			"packages/web/Makefile", "packages/web/Taskfile.yml", ".bazelrc", "JUSTFILE", "packages/web/.JustFile", "meson.build", "src/sub/meson.build"}},
		{"node", []string{".yarnrc.yml", ".yarnrc", ".npmrc", ".pnpmfile.cjs", "eslint.config.js", ".yarn/releases/yarn.cjs",
			"packages/web/.npmrc", "packages/web/.eslintrc.cjs", ".prettierrc.json", ".babelrc", ".mocharc.yml", ".lintstagedrc",
			"babel.config.json", "gulpfile.js", "Gruntfile.js", "nx.json", "libs/ui/project.json", "packages/web/.prettierrc"}},
		{"python", []string{"conftest.py", "tests/unit/conftest.py", "tox.ini", "noxfile.py", "pytest.ini", ".pytest.ini", ".pdbrc",
			"requirements.txt", "requirements-dev.txt", "requirements/base.txt",
			".venv/lib/python3.12/site-packages/_virtualenv.py", ".venv/lib/python3.12/site-packages/_distutils_hack/__init__.py",
			".venv/lib/python3.12/site-packages/__editable___x_1_0_finder.py", ".venv/lib/python3.12/site-packages/__pycache__/sitecustomize.cpython-312.pyc",
			".venv/lib/python3.12/site-packages/evil.pth", ".venv/lib/python3.12/site-packages/sitecustomize.py",
			".venv/bin/python", "services/api/.venv/pip.conf"}},
		{"rust", []string{".cargo/config.toml", "build.rs", "rust-toolchain.toml", "packages/core/.cargo/config.toml",
			"packages/.cargo/config.toml", ".config/nextest.toml"}},
		{"go", []string{"go.work", "packages/svc/go.mod", "packages/go.work"}},
		{"java", []string{".mvn/extensions.xml", "gradle/wrapper/gradle-wrapper.properties", "build.gradle.kts", "gradlew", "packages/.mvn/extensions.xml"}},
		{"ruby", []string{"Gemfile", "Rakefile", ".bundle/config", "rakefile", "Rakefile.rb", "gems.rb", ".rspec", ".irbrc", ".pryrc"}},
		{"php", []string{"composer.json"}},
		{"dotnet", []string{"Directory.Build.props", "app.csproj", "global.json", "packages/Directory.Build.props", ".config/dotnet-tools.json"}},
		{"editor", []string{".vscode/extensions.json", ".vscode/mcp.json", ".vscode/settings.json", ".devcontainer.json",
			".idea/workspace.xml", "packages/web/.vscode/tasks.json"}},
		{"agent", []string{".cursor/mcp.json", ".gemini/settings.json", ".codex/config.toml", "CLAUDE.local.md", "AGENTS.md",
			"packages/web/AGENTS.md", "packages/web/.claude/settings.json", "packages/web/CLAUDE.md", ".mcp.json",
			".github/instructions/all.instructions.md", ".github/prompts/release.prompt.md", ".aider.conf.yml", ".windsurfrules", ".clinerules"}},
		{"shell", []string{"mise.toml", ".mise.toml", ".tool-versions", ".envrc", "packages/web/.envrc", "flake.nix", "default.nix", "devbox.json",
			".env", ".env.local", "packages/web/.env"}},
		{"infra", []string{"compose.yaml", "docker-compose.yml", "Vagrantfile", "main.tf", "infra/modules/net/vars.tf", "Tiltfile", "skaffold.yaml"}},
		{"abox", []string{"agentbox.yaml"}},
	} {
		t.Run(tc.class, func(t *testing.T) {
			ws := t.TempDir()
			write(t, ws, map[string]string{
				"package.json": "{}\n", "packages/web/package.json": "{}\n", "packages/core/Cargo.toml": "[package]\n",
				"packages/svc/main.go": "package main\n", "packages/svc/Makefile": "all:\n",
				".venv/pyvenv.cfg": "home = /usr/bin\n", ".venv/bin/pip": "#!/bin/sh\n", "services/api/.venv/pyvenv.cfg": "home = /usr/bin\n",
				".git/info/.keep": "", "tests/unit/test_a.py": "",
			})
			before := Take(Scope{Workspace: ws})
			plant := map[string]string{}
			for _, p := range tc.plant {
				plant[p] = "sh evil.sh\n"
			}
			write(t, ws, plant)
			added := map[string]ExecChange{}
			for _, c := range DiffFiles(before.Files, Take(Scope{Workspace: ws}).Files) {
				if c.Change == "added" {
					added[c.Name] = c
				}
			}
			for _, p := range tc.plant {
				if c, ok := added[p]; !ok || c.Tool == "" {
					t.Errorf("planted %s: %+v, want an added file with the tool that runs it", p, c)
				}
			}
		})
	}
}

// TestEveryCatalogEntryIsWatched: a file each entry's pattern names, planted where the entry
// applies (the root; a workspace package; a virtualenv; a directory three levels down), is in
// the next snapshot as a change, described by a catalog entry.
func TestEveryCatalogEntryIsWatched(t *testing.T) {
	base := map[string]string{"packages/web/package.json": "{}\n", "envs/py/pyvenv.cfg": "home = /usr/bin\n", "deep/a/b/c/x.txt": "", ".git/info/.keep": ""}
	for _, e := range Catalog() {
		var where []string
		switch e.Reach {
		case AtRoot:
			where = []string{""}
		case AtPackage:
			where = []string{"", "packages/web/"}
		case InVenv:
			where = []string{"envs/py/"}
		case InEveryDir:
			where = []string{"", "deep/a/b/c/"}
		}
		for _, w := range where {
			rel := w + concrete(e.Pattern)
			ws := t.TempDir()
			write(t, ws, base)
			before := Take(Scope{Workspace: ws})
			write(t, ws, map[string]string{rel: "sh evil.sh\n"})
			after := Take(Scope{Workspace: ws})
			if before.Files[rel] == after.Files[rel] || after.Files[rel] == "" {
				t.Errorf("%s (%s): planted %s, before %q, after %q: want a change", e.Pattern, e.Reach, rel, before.Files[rel], after.Files[rel])
			}
			if _, ok := Lookup(rel, nil); !ok {
				t.Errorf("%s: Lookup(%s) finds no entry", e.Pattern, rel)
			}
		}
	}
}

// concrete is a path the pattern names: each glob character taken for a letter, a class for
// its last character (JUSTFILE for [jJ][uU]…), a directory given a file.
func concrete(pattern string) string {
	p := regexp.MustCompile(`\[[^]]*(.)\]`).ReplaceAllString(pattern, "$1")
	p = strings.NewReplacer("*", "x", "?", "x").Replace(p)
	if strings.HasSuffix(p, "/") {
		p += "f"
	}
	return p
}

// TestLookup: the review of a branch finds the entry that covers a path wherever it lies, by
// each entry's reach.
func TestLookup(t *testing.T) {
	venvs := func(d string) bool { return d == ".venv" }
	for _, tc := range []struct {
		rel, tool string
		venv      func(string) bool
	}{
		{".cargo/config.toml", "cargo", nil},
		{"crates/core/.cargo/config.toml", "cargo", nil},
		{".github/workflows/ci.yml", "GitHub Actions", nil},
		{"vendor/x/.github/workflows/ci.yml", "", nil}, // CI reads the root's only
		{"a/b/c/conftest.py", "pytest", nil},
		{".venv/lib/python3.12/site-packages/x.pth", "the virtualenv's python", venvs},
		{"lib/python3.12/site-packages/x.pth", "", venvs}, // the root is not a virtualenv
		{".venv/bin/python", "the virtualenv's scripts", venvs},
		{".venv/bin/python", "", func(string) bool { return false }},
		{"web/.claude/settings.json", "Claude Code", nil},
		{"src/main.go", "", nil},
		{"README.md", "", nil},
	} {
		e, ok := Lookup(tc.rel, tc.venv)
		if e.Tool != tc.tool || ok != (tc.tool != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tc.rel, e.Tool, ok, tc.tool)
		}
	}
}

// TestHiddenWhy: what a reviewer is told of a path no entry covers: the first hidden directory
// the catalog names nothing in, an entry of one it knows for something else, a hidden file it
// does not know; not an inert hidden file, nor what an entry covers.
func TestHiddenWhy(t *testing.T) {
	unknownDir := func(d string) string { return "in " + d + "/, a hidden directory the catalog does not know" }
	for rel, want := range map[string]string{
		".foo/x":                    unknownDir(".foo"),
		"web/.foo/bar/x":            unknownDir("web/.foo"),
		".claude/settings.json":     "",
		".github/ISSUE_TEMPLATE/x":  "in .github/, beside what the catalog knows there",
		".github/workflows/ci.yml":  "",
		".github/prompts/a.md":      "",
		".git/info/attributes":      "",
		".gitignore":                "", // inert
		"web/.dockerignore":         "",
		".hiddenfile":               "a hidden file the catalog does not know",
		"web/src/.aider.conf.yml":   "",
		"a/.husky/x":                unknownDir("a/.husky"), // husky is read at the root only
		".venv/lib/site-packages/x": unknownDir(".venv"),
		".babelrc":                  "",
		"src/main.go":               "",
	} {
		if _, named := Lookup(rel, nil); named && want == "" {
			continue
		}
		if got := HiddenWhy(rel); got != want {
			t.Errorf("HiddenWhy(%q) = %q, want %q", rel, got, want)
		}
	}
}

// TestGlobMatchIsPathMatch: the compiled patterns the search matches names with agree with
// path.Match on every pattern of the catalog, the markers and the inert names, for names that
// match each and names that nearly do.
func TestGlobMatchIsPathMatch(t *testing.T) {
	names := []string{"", ".", "x", "JUSTFILE", "justfile", "JustFile", "justfilex", ".justfile", ".JUSTFILE", "Makefile", "makefile",
		"a.config.js", ".config.js", "x.config.jsx", ".babelrc", ".npmrc", ".prettierrc.json", ".rc", "rc", "Gruntfile.js", "gruntfile.coffee",
		"requirements.txt", "requirements-dev.txt", "main.tf", ".tf", "x.tf.json", ".env", ".env.local", ".envrc", ".gitignore", "evil.pth",
		"python3.12", "site-packages", "__editable___x_finder.py", "sitecustomize.cpython-312.pyc", "app.csproj", "Taskfile.yml", "lefthook.yml"}
	for p := range globs {
		for _, n := range append(names, concrete(p)) {
			want, _ := path.Match(p, n)
			if got := globMatch(p, n); got != want {
				t.Errorf("globMatch(%q, %q) = %v, path.Match says %v", p, n, got, want)
			}
		}
	}
}
