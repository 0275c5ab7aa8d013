//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/watch"
)

// Issue 34's "tools the watch does not know": what the agent leaves at the top of the workspace
// for the host's tools, none of it a name the watch had (SECURITY.md F45, F46, W22). Each file
// is one class of the catalog, with the tool the report must name.

// catalogPlant is a file the agent writes and the tool the catalog says runs it.
type catalogPlant struct{ path, tool string }

// catalogPlants are the attack's files, in two runs: a run's summary lists twenty changes one
// a line. The virtualenv is the project's own .venv (its pyvenv.cfg is there before the run).
var catalogPlants = [][]catalogPlant{{
	{".cargo/config.toml", "cargo"},                                            // rust: build.rustc-wrapper, on cargo metadata
	{".venv/lib/python3.11/site-packages/evil.pth", "the virtualenv's python"}, // python: on the next .venv/bin/python
	{"lefthook.yml", "lefthook"},                                               // git hooks
	{"Taskfile.yml", "Task"},                                                   // build
	{"mise.toml", "mise, asdf"},                                                // shell
	{".tool-versions", "mise, asdf"},                                           //
	{"conftest.py", "pytest"},                                                  // python
	{"tox.ini", "tox, nox, Pipenv"},                                            //
	{"noxfile.py", "tox, nox, Pipenv"},                                         //
	{".mvn/extensions.xml", "Maven"},                                           // java
	{"gradle/wrapper/gradle-wrapper.properties", "Gradle"},                     //
	{"CMakePresets.json", "CMake"},                                             // build
	{".lfsconfig", "Git LFS"},                                                  // git
	{".gitmodules", "git submodule"},                                           //
	{".circleci/config.yml", "CircleCI, Azure Pipelines, Jenkins, Buildkite"},  // ci
}, {
	{".vscode/extensions.json", "VS Code (and Cursor, its fork)"},                                                         // editor
	{".vscode/mcp.json", "VS Code (and Cursor, its fork)"},                                                                //
	{".cursor/mcp.json", "Gemini CLI, Cursor, Codex CLI"},                                                                 // agent
	{".gemini/settings.json", "Gemini CLI, Cursor, Codex CLI"},                                                            //
	{"CLAUDE.local.md", "Claude Code"},                                                                                    //
	{"AGENTS.md", "Codex, Cursor, Gemini CLI and other agents"},                                                           //
	{"eslint.config.js", "node tools (ESLint, Prettier, Babel, Vite, Jest, Vitest, webpack, Tailwind, PostCSS, Next.js)"}, // node
	{"go.work", "go"},                                   // go
	{"Gemfile", "Bundler, Rake"},                        // ruby
	{"composer.json", "Composer"},                       // php
	{"Directory.Build.props", "MSBuild, dotnet, NuGet"}, // dotnet
}}

// plantCatalog is the agent's script writing plants (and a hidden directory of its own, .foo/).
func plantCatalog(plants []catalogPlant, hidden string) string {
	var lines []string
	for _, p := range plants {
		lines = append(lines, `mkdir -p "$(dirname `+shq(p.path)+`)" && printf 'sh /workspace/evil.sh\n' > `+shq(p.path))
	}
	if hidden != "" {
		lines = append(lines, `mkdir -p `+hidden+` && printf 'sh /workspace/evil.sh\n' > `+hidden+`/run.sh`)
	}
	return strings.Join(append(lines, "echo planted"), "\n")
}

// catalogWorkspace is a git checkout with a package.json and the project's own virtualenv,
// owned by the agent's uid.
func catalogWorkspace(t *testing.T, h *harness.H) {
	t.Helper()
	execWorkspace(t, h)
	h.WriteFile(".venv/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\n")
	h.WriteFile(".venv/bin/activate", "# activate\n")
	agentOwns(t, h)
}

// TestAttackCatalogLive: the agent leaves, in two live runs, one file of each class of the
// catalog at the top of the workspace — what issue 34's attack left unreported — and a hidden
// directory of its own. Each run's summary names every file with the tool that runs it and the
// new hidden directory, and doctor's workspace.exec-surface lists them all until accepted.
func TestAttackCatalogLive(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	catalogWorkspace(t, h)
	upProject(t, h, "catalog", nil, "")
	agentOwns(t, h)
	for i, plants := range catalogPlants {
		hidden := ""
		if i == 0 {
			hidden = ".foo"
		}
		res := h.Abox("run", plantCatalog(plants, hidden))
		if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "planted") {
			t.Fatalf("abox run %d: %s", i+1, res)
		}
		var wants []string
		for _, p := range plants {
			wants = append(wants, "    added "+p.path+" — "+p.tool+"\n")
		}
		if hidden != "" {
			wants = append(wants, "    new hidden directory: .foo/\n")
		}
		summaryNames(t, res, wants...)
	}
	surface := doctorChecks(t, h)["workspace.exec-surface"]
	var changes []watch.ExecChange
	if err := json.Unmarshal([]byte(jsonOf(surface.Data["changes"])), &changes); err != nil {
		t.Fatalf("doctor's workspace.exec-surface changes: %v (%s)", err, jsonOf(surface.Data))
	}
	got := map[string]string{}
	for _, c := range changes {
		got[c.Name] = c.String()
	}
	for _, plants := range catalogPlants {
		for _, p := range plants {
			if want := "added " + p.path + " — " + p.tool; got[p.path] != want {
				t.Errorf("doctor's workspace.exec-surface: %s is %q, want %q", p.path, got[p.path], want)
			}
		}
	}
	if got[".foo/"] != "new hidden directory: .foo/" || surface.Status != doctor.Warn {
		t.Errorf("doctor's workspace.exec-surface = %s (%s), want a warning naming .foo/: %v", surface.Status, surface.Detail, got)
	}
}

// TestAttackCatalogIsolated: the same files arrive through an isolated run's branch, with the
// virtualenv's .pth for the user's own .venv (untracked). abox diff marks each "!" with the tool that runs it, and the file in a hidden
// directory the catalog does not know; an ordinary file stays unmarked. doctor's
// workspace.isolated-runs names them all.
func TestAttackCatalogIsolated(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	gitRepo(t, h, map[string]string{"README": "hello\n"})
	workspaceFile(t, h.Workspace, ".venv/pyvenv.cfg", "home = /usr/bin\n") // the user's, untracked
	agentOwns(t, h)
	upProject(t, h, "isocatalog", nil, "")
	var plants []catalogPlant
	for _, ps := range catalogPlants {
		plants = append(plants, ps...)
	}
	res := h.Abox("run", "--isolated", "printf 'package main\\n' > main.go\n"+plantCatalog(plants, ".foo"))
	if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "planted") {
		t.Fatalf("abox run --isolated: %s", res)
	}
	if !strings.Contains(res.Stderr, "· execution-adjacent: ") {
		t.Errorf("the run's summary names no execution-adjacent file:\n%s", res.Stderr)
	}
	branches := isolatedBranches(t, h)
	if len(branches) != 1 {
		t.Fatalf("isolated runs recorded: %v, want 1", branches)
	}
	var id string
	for id = range branches {
	}
	diff := h.Abox("diff", id)
	if !diff.OK() {
		t.Fatalf("abox diff: %s", diff)
	}
	for _, p := range plants {
		if want := "! A " + p.path + "  (execution-adjacent: " + p.tool + ")\n"; !strings.Contains(diff.Stdout, want) {
			t.Errorf("abox diff lacks %q", want)
		}
	}
	for _, want := range []string{"! A .foo/run.sh  (execution-adjacent: in .foo/, a hidden directory the catalog does not know)\n", "  A main.go\n"} {
		if !strings.Contains(diff.Stdout, want) {
			t.Errorf("abox diff lacks %q:\n%s", want, diff.Stdout)
		}
	}
	runs := doctorChecks(t, h)["workspace.isolated-runs"]
	data := jsonOf(runs.Data)
	for _, p := range append(plants, catalogPlant{path: ".foo/run.sh"}) {
		if !strings.Contains(data, `"`+p.path+`"`) {
			t.Errorf("doctor's workspace.isolated-runs (%s: %s) does not name %s", runs.Status, runs.Detail, p.path)
		}
	}
	if strings.Contains(data, `"main.go"`) {
		t.Errorf("doctor's workspace.isolated-runs names main.go as execution-adjacent: %s", data)
	}
}
