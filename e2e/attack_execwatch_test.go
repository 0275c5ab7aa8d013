//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
)

// plantExec is the hostile run of issue 24: Makefile replaced by a FIFO, package.json by a
// symlink to /dev/zero, a CI workflow added as a symlink to /etc/shadow, and core.fsmonitor
// set in .git/config — each of them runs (or makes the host read) something outside the
// sandbox later.
var plantExec = strings.Join([]string{
	`rm -f Makefile && mkfifo Makefile`,
	`ln -sfn /dev/zero package.json`,
	`mkdir -p .github/workflows && ln -s /etc/shadow .github/workflows/ci.yml`,
	`printf '[core]\n\tfsmonitor = /workspace/evil.sh\n' >> .git/config`,
	`echo planted`,
}, "\n")

// execWorkspace makes the test's workspace a git repository with a Makefile and a
// package.json, owned by the agent's uid as a checkout it works in would be.
func execWorkspace(t *testing.T, h *harness.H) {
	t.Helper()
	if out, err := exec.Command("git", "init", "-q", h.Workspace).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	h.WriteFile("Makefile", "all:\n\ttrue\n")
	h.WriteFile("package.json", "{\"scripts\": {}}\n")
	agentOwns(t, h)
}

// agentOwns gives the workspace to the agent's uid, as a checkout the user works in is the
// user's (abox runs as root here, and `abox up` writes the review copy).
func agentOwns(t *testing.T, h *harness.H) {
	t.Helper()
	if out, err := exec.Command("chown", "-R", "1000:1000", h.Workspace).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
}

// TestAttackExecChangesFromTheFirstRun: the user's sequence of issue 24 — init, up, one hostile
// run, then the first doctor. abox up took the baseline before any agent ran, so the run's own
// summary lists what it changed (a FIFO and symlinks named as such), runs.jsonl and logs carry
// it, and the first doctor reports all of it, again and again until accepted. The run itself
// exits 0: run.on_exec_change is warn by default. A project without a baseline starts no agent.
func TestAttackExecChangesFromTheFirstRun(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	execWorkspace(t, h)
	h.WriteConfig(h.DefaultConfig())
	mustAbox(t, h, "init", "--yes", "--project", "execwatch", "--profile", h.Profile)
	if up := mustAbox(t, h, "up", "--yes"); !strings.Contains(up.Stdout, "baseline recorded: ") {
		t.Errorf("abox up did not record the baseline:\n%s", up)
	}

	res := h.Abox("run", plantExec)
	if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "planted") {
		t.Fatalf("abox run: %s", res)
	}
	for _, want := range []string{
		"execution-adjacent changes: 4 ",
		"    changed Makefile (now a FIFO)",
		"    changed package.json (now a symlink → /dev/zero)",
		"    added .github/workflows/ci.yml (a symlink → /etc/shadow)",
		"    added core.fsmonitor = /workspace/evil.sh",
	} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("the run's summary lacks %q:\n%s", want, res.Stderr)
		}
	}
	runs := runRecords(t, h)
	if changes, _ := runs[0]["exec_changes"].([]any); len(changes) != 4 {
		t.Errorf("runs.jsonl exec_changes = %v, want the 4 changes", runs[0]["exec_changes"])
	}
	checkLogsExec(t, h, 4)

	// the first doctor, and the next: both report all three files and the git key
	for i := 0; i < 2; i++ {
		checks := doctorChecks(t, h)
		surface, git := checks["workspace.exec-surface"], checks["git.tamper"]
		changes, _ := json.Marshal(surface.Data["changes"])
		for _, f := range []string{`"Makefile"`, `"package.json"`, `".github/workflows/ci.yml"`, `"new":"fifo"`, `"new":"symlink:/dev/zero"`, `"new":"symlink:/etc/shadow"`} {
			if !strings.Contains(string(changes), f) {
				t.Errorf("doctor %d: workspace.exec-surface changes %s lack %s (%s: %s)", i+1, changes, f, surface.Status, surface.Detail)
			}
		}
		if surface.Status != doctor.Warn || git.Status != doctor.Fail || !strings.Contains(git.Detail, "core.fsmonitor") {
			t.Errorf("doctor %d: exec-surface %s (%s), git.tamper %s (%s); want warn and a fail naming core.fsmonitor",
				i+1, surface.Status, surface.Detail, git.Status, git.Detail)
		}
	}

	// no baseline, no agent; abox up takes it again
	baselines := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "baselines.json")
	if err := os.Remove(baselines); err != nil {
		t.Fatal(err)
	}
	refused := h.Abox("run", "echo should-not-run")
	if refused.ExitCode != 1 || !strings.Contains(refused.Stderr, "no baseline") || !strings.Contains(refused.Stderr, "↳ run `abox up`") {
		t.Errorf("a run without a baseline: %s; want exit 1 and the `abox up` hint", refused)
	}
	if n := len(runRecords(t, h)); n != 1 {
		t.Errorf("runs.jsonl holds %d runs after the refusal, want 1: no agent started", n)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers after the refusal: %v", left)
	}
}

// checkLogsExec: abox logs --runs shows the newest run's count in its EXEC column, and --json
// the list.
func checkLogsExec(t *testing.T, h *harness.H, want int) {
	t.Helper()
	text := mustAbox(t, h, "logs", "--runs")
	lines := strings.Split(strings.TrimSpace(text.Stdout), "\n")
	head, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	col := -1
	for i, f := range head {
		if f == "EXEC" {
			col = i
		}
	}
	if col < 0 || col >= len(row) || row[col] != strconv.Itoa(want) {
		t.Errorf("abox logs --runs: EXEC column %d of %q, want %d:\n%s", col, row, want, text.Stdout)
	}
	var recs []telemetry.RunRecord
	if err := json.Unmarshal([]byte(mustAbox(t, h, "logs", "--runs", "--json").Stdout), &recs); err != nil || len(recs[0].ExecChanges) != want {
		t.Errorf("abox logs --runs --json: %v, %+v; want %d exec_changes", err, recs, want)
	}
}

// TestAttackExecWatchStallsNothing: a hostile run plants what would stall a reader on the host
// — FIFOs at watched paths and in the review copy, and symlinks to a 64 GiB host file and to
// /dev/zero at watched paths and as .git/config — and neither its teardown (netd stopped, logs
// harvested, containers removed, the workspace compared) nor the next doctor takes more than a
// second longer than after a run that plants nothing. A reader that followed one link would
// read for many seconds; one that opened a FIFO would never return. The project sets
// run.on_exec_change: fail, so the hostile run exits 4, and the control, which changes
// nothing, exits 0.
func TestAttackExecWatchStallsNothing(t *testing.T) {
	h := harness.Setup(t)
	execWorkspace(t, h)
	big := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(64 << 30)
	f.Close()
	upProject(t, h, "execstall", nil, "run: {on_exec_change: fail}\n")
	agentOwns(t, h)

	mustAbox(t, h, "run", "echo quiet")
	controlTeardown := teardownTime(t, h)
	controlDoctor := doctorTime(t, h)

	hostile := strings.Join([]string{
		`rm -f Makefile .envrc && mkfifo Makefile .envrc`,
		`ln -sfn /dev/zero package.json`,
		`mkdir -p .claude .vscode .github/workflows`,
		`ln -sfn ` + big + ` .claude/settings.json`,
		`ln -sfn ` + big + ` .vscode/tasks.json`,
		`ln -sfn ` + big + ` .github/workflows/ci.yml`,
		`ln -sfn ` + big + ` .git/config`,
		`rm -f .devcontainer/compose.yaml && mkfifo .devcontainer/compose.yaml`,
		`ln -sfn /dev/zero .devcontainer/netpolicy.nft`,
		`echo planted`,
	}, "\n")
	res := h.Abox("run", hostile)
	if res.ExitCode != 4 || !strings.Contains(agentOutput(res.Stdout), "planted") {
		t.Fatalf("abox run: %s; want exit 4 (run.on_exec_change: fail)", res)
	}
	for _, want := range []string{"changed Makefile (now a FIFO)", "added .claude/settings.json (a symlink → " + big + ")",
		"error: the run changed ", "execution-adjacent file(s) or git setting(s), and run.on_exec_change is fail"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("the run's summary lacks %q:\n%s", want, res.Stderr)
		}
	}
	hostileTeardown := teardownTime(t, h)
	hostileDoctor := doctorTime(t, h)
	t.Logf("teardown %s (control %s), doctor %s (control %s)", hostileTeardown, controlTeardown, hostileDoctor, controlDoctor)
	if hostileTeardown > controlTeardown+time.Second {
		t.Errorf("the hostile run's teardown took %s, the control's %s: more than a second longer", hostileTeardown, controlTeardown)
	}
	if hostileDoctor > controlDoctor+time.Second {
		t.Errorf("doctor after the hostile run took %s, after the control %s: more than a second longer", hostileDoctor, controlDoctor)
	}
}

// teardownTime is the newest run's time from its agent's exit to its end: netd stopped, logs
// harvested, containers removed, the workspace snapshotted and compared.
func teardownTime(t *testing.T, h *harness.H) time.Duration {
	t.Helper()
	var phases []sandbox.Phase
	runs := runRecords(t, h)
	readJSON(t, filepath.Join(runs[len(runs)-1]["run_dir"].(string), "phases.json"), &phases)
	var d time.Duration
	seen := map[string]bool{}
	for _, p := range phases {
		switch p.Name {
		case "netd stop", "harvest", "teardown", "exec diff":
			d += p.Dur
			seen[p.Name] = true
		}
	}
	if !seen["exec diff"] {
		t.Fatalf("phases %v lack exec diff", phases)
	}
	return d
}

// doctorTime is the shortest of two `abox doctor --json` runs, which must not fail to run.
func doctorTime(t *testing.T, h *harness.H) time.Duration {
	t.Helper()
	best := time.Duration(1<<63 - 1)
	for i := 0; i < 2; i++ {
		start := time.Now()
		doctorChecks(t, h)
		best = min(best, time.Since(start))
	}
	return best
}
