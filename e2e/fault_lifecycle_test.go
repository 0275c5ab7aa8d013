//go:build e2e

package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/telemetry"
)

// The ways `abox run` can end other than by its agent: a closed terminal, abox killed, abox
// frozen past the run's deadline, abox and its warden killed together. Each run's agent ignores
// every signal a terminal sends and writes the workspace until something stops it, so only the
// sandbox's own teardown can end it.

// endBound is the bound README states: the agent stopped, netd's logs harvested, the run
// recorded and its containers gone, within this long of abox's end.
const endBound = 30 * time.Second

// heartbeatPrompt looks name up through netd (so that the review queue has it), then ignores
// HUP, INT, TERM and QUIT and appends to heartbeat in the workspace five times a second.
func heartbeatPrompt(name string) string {
	return "trap '' HUP INT TERM QUIT; claude net dns 127.0.0.1:53 " + name + " >/dev/null; touch looked-up; " +
		"while :; do date +%s%N >> heartbeat; sleep 0.2; done"
}

// inGroup starts abox as the leader of a process group of its own, as a shell starts a job on
// a terminal: a closing terminal signals the whole group.
func inGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// startHeartbeat starts `abox run` with [heartbeatPrompt] and waits until the agent looked the
// name up and writes the heartbeat.
func startHeartbeat(t *testing.T, h *harness.H, name string, args ...string) (*exec.Cmd, func() harness.Result) {
	t.Helper()
	cmd, wait := startAboxWith(t, h, h.Workspace, nil, inGroup, append(append([]string{"run"}, args...), heartbeatPrompt(name))...)
	waitWorkspaceFile(t, h.Workspace, "looked-up")
	waitWorkspaceFile(t, h.Workspace, "heartbeat")
	return cmd, wait
}

// ended checks what every way of ending a run must leave, within endBound of since: no
// container of the project, a workspace the agent no longer writes, and the run recorded with
// outcome, netd's counters and the name the agent looked up in the review queue. It returns the
// run's record.
func ended(t *testing.T, h *harness.H, since time.Time, outcome, name string) telemetry.RunRecord {
	t.Helper()
	if !pollUntil(endBound, func() bool { return len(projectContainers(h)) == 0 && len(allRunRecordsQuiet(h)) > 0 }) {
		t.Fatalf("%s after abox's end: containers %v, runs %v", endBound, projectContainers(h), allRunRecordsQuiet(h))
	}
	t.Logf("the run was recorded and its containers gone %.1fs after abox's end", time.Since(since).Seconds())
	if still := heartbeatGrows(h); still {
		t.Errorf("the workspace is still being written after the run was torn down")
	}
	runs := allRunRecords(t, h)
	run := runs[len(runs)-1]
	if run.Outcome != outcome {
		t.Errorf("outcome %q, want %q (notes %q)", run.Outcome, outcome, run.Notes)
	}
	hv, err := telemetry.ReadHarvest(filepath.Join(run.RunDir, "netd"))
	if err != nil || hv.Counters == nil {
		t.Errorf("netd's counters were not harvested: %v", err)
	}
	denied, _ := os.ReadFile(filepath.Join(h.StateHome, "projects", h.ProjectHash(), "denied.jsonl"))
	if !strings.Contains(string(denied), name) {
		t.Errorf("the review queue lacks %s, which the agent looked up:\n%s", name, denied)
	}
	return run
}

// waitBounded waits for abox (started with wait) to end within endBound, and kills it and fails
// the test when it does not: a control turned off must fail the test, not hang it.
func waitBounded(t *testing.T, cmd *exec.Cmd, wait func() harness.Result) harness.Result {
	t.Helper()
	done := make(chan harness.Result, 1)
	go func() { done <- wait() }()
	select {
	case res := <-done:
		return res
	case <-time.After(endBound):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Process.Kill()
		t.Fatalf("abox still runs %s on", endBound)
		return harness.Result{}
	}
}

// heartbeatGrows reports whether the heartbeat file grows over a second and a half.
func heartbeatGrows(h *harness.H) bool {
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(h.Workspace, "heartbeat"))
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	before := size()
	time.Sleep(1500 * time.Millisecond)
	return size() != before
}

// allRunRecordsQuiet is the project's runs, none when it has none yet.
func allRunRecordsQuiet(h *harness.H) []telemetry.RunRecord {
	runs, _, _ := telemetry.ReadRuns(filepath.Join(h.StateHome, "projects", h.ProjectHash(), "runs.jsonl"))
	return runs
}

// TestFaultHangup: the terminal of a running `abox run` closes — SIGHUP to its whole process
// group, the docker CLI abox runs included — while the agent ignores HUP and writes the
// workspace. abox tears the run down as at Ctrl-C and records it as a hangup.
func TestFaultHangup(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "hangup", nil, "")
	cmd, wait := startHeartbeat(t, h, "before-hangup.test")
	start := time.Now()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGHUP)
	res := waitBounded(t, cmd, wait)
	if strings.Contains(res.Stderr, "goroutine ") {
		t.Errorf("abox crashed:\n%s", res.Stderr)
	}
	ended(t, h, start, "hangup", "before-hangup.test")
}

// TestFaultAboxKilled: `kill -9` of abox mid-run. Nothing of abox runs its teardown: the run's
// warden sees abox's end of its pipe close, kills the agent, finishes netd, harvests and
// records the run as abox-killed.
func TestFaultAboxKilled(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "aboxkill", nil, "")
	cmd, wait := startHeartbeat(t, h, "before-abox-kill.test")
	start := time.Now()
	cmd.Process.Kill()
	wait()
	if !pollUntil(endBound, func() bool { return !heartbeatGrows(h) }) {
		t.Fatalf("the agent still writes the workspace %s after abox was killed", endBound)
	}
	t.Logf("the workspace stopped changing %.1fs after abox was killed", time.Since(start).Seconds())
	run := ended(t, h, start, "abox-killed", "before-abox-kill.test")
	if !strings.Contains(strings.Join(run.Notes, "\n"), "its warden finished the run") {
		t.Errorf("notes %q do not say who finished the run", run.Notes)
	}
}

// TestFaultAboxFrozenPastDeadline: abox stopped (SIGSTOP, as a suspended job or a frozen
// process) while its agent runs with a 4 s timeout. abox cannot act, so the warden kills the
// agent a grace period past the deadline; once abox goes on, it records the run as a timeout.
func TestFaultAboxFrozenPastDeadline(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "frozen", nil, "")
	cmd, wait := startHeartbeat(t, h, "before-freeze.test", "--timeout", "4s")
	syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP)
	frozen := time.Now()
	const bound = 4*time.Second + 10*time.Second + 15*time.Second // the timeout, the warden's grace, slack
	if !pollUntil(bound, func() bool { return !heartbeatGrows(h) }) {
		syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		t.Fatalf("the agent of a frozen abox still writes the workspace %s after its timeout", bound)
	}
	t.Logf("the frozen abox's agent stopped %.1fs after abox froze", time.Since(frozen).Seconds())
	syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
	waitBounded(t, cmd, wait)
	ended(t, h, frozen, "timeout", "before-freeze.test")
}

// TestFaultOrphanReaped: abox and its warden killed together (`pkill -9 abox`): nothing is left
// to end the run, and its agent goes on. doctor names the run, and the project's next `abox
// run` finishes it first, saying so, and records it as orphaned.
func TestFaultOrphanReaped(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "orphan", nil, "")
	cmd, wait := startHeartbeat(t, h, "before-orphan.test")
	wardens := wardenPIDs(t, h)
	if len(wardens) != 1 {
		t.Fatalf("want the run's one warden, found %v", wardens)
	}
	cmd.Process.Kill()
	syscall.Kill(wardens[0], syscall.SIGKILL)
	wait()
	if !heartbeatGrows(h) {
		t.Fatal("the orphan's agent stopped by itself: nothing shows that the next run reaps it")
	}
	run := runOf(t, h)
	if c := doctorChecks(t, h)["sandbox.orphans"]; c.Status != doctor.Fail || !strings.Contains(c.Detail, "run "+run) {
		t.Errorf("doctor's sandbox.orphans: %s %q, want it to fail naming run %s", c.Status, c.Detail, run)
	}
	res := h.Abox("run", "true")
	if !res.OK() || !strings.Contains(res.Stderr, "whose abox and warden were gone, and recorded it as orphaned") {
		t.Fatalf("the next run did not say it finished the orphan: %s", res)
	}
	if heartbeatGrows(h) {
		t.Error("the orphan's agent still writes the workspace after the next run")
	}
	outcomes := map[string]string{}
	for _, r := range allRunRecords(t, h) {
		outcomes[r.ID] = r.Outcome
	}
	if len(outcomes) != 2 || outcomes[run] != "orphaned" {
		t.Errorf("runs %v, want the orphan %s recorded as orphaned, and the new run", outcomes, run)
	}
	if c := doctorChecks(t, h)["sandbox.orphans"]; c.Status != doctor.OK {
		t.Errorf("doctor's sandbox.orphans after the reap: %s %q", c.Status, c.Detail)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}

// runOf is the id of the project's one run that has a directory.
func runOf(t *testing.T, h *harness.H) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(h.StateHome, "projects", h.ProjectHash(), "runs", "*-*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v, want one", dirs)
	}
	return dirs[0][strings.LastIndex(dirs[0], "-")+1:]
}

// wardenPIDs finds the processes of `abox warden` for the test's state directory.
func wardenPIDs(t *testing.T, h *harness.H) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(b), "\x00")
		if len(args) > 3 && args[1] == "warden" && strings.HasPrefix(args[3], h.StateHome+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestFaultShellHangup: the terminal of an interactive `abox shell` closes while a job of the
// shell ignores HUP and writes the workspace. The shell is torn down as `exit` would tear it
// down, and recorded as a hangup.
func TestFaultShellHangup(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "shellhup", nil, "")
	term := h.StartOnTerminal("shell")
	waitRunning(t, h, "agent")
	time.Sleep(2 * time.Second) // the docker CLI drops what is typed before it makes the terminal raw
	term.Type("claude net dns 127.0.0.1:53 before-shell-hangup.test >/dev/null; touch looked-up; " +
		"(trap '' HUP INT TERM QUIT; while :; do date +%s%N >> heartbeat; sleep 0.2; done) &\n")
	waitWorkspaceFile(t, h.Workspace, "looked-up")
	waitWorkspaceFile(t, h.Workspace, "heartbeat")
	start := time.Now()
	term.Hangup()
	term.WaitWithin(endBound)
	if run := ended(t, h, start, "hangup", "before-shell-hangup.test"); run.Kind != "shell" {
		t.Errorf("the run is recorded as a %s, want a shell", run.Kind)
	}
}

// TestFaultOutputClosed: `abox run … | head -1`: what reads abox's output goes away while the
// agent, ignoring every signal, prints and writes the workspace. abox's next write fails with
// EPIPE (it takes SIGPIPE rather than dying of it) and ends the run as a closed terminal does.
func TestFaultOutputClosed(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "outclosed", nil, "")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	prompt := "trap '' HUP INT TERM QUIT PIPE; claude net dns 127.0.0.1:53 before-output-closed.test >/dev/null; touch looked-up; " +
		"while :; do date +%s%N >> heartbeat; echo '::tool_use name=Bash'; sleep 0.2; done"
	cmd, wait := startAboxWith(t, h, h.Workspace, nil, func(c *exec.Cmd) { c.Stdout = w; inGroup(c) }, "run", prompt)
	w.Close()
	waitWorkspaceFile(t, h.Workspace, "heartbeat")
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatalf("reading abox's first line: %v", err)
	}
	start := time.Now()
	r.Close()
	waitBounded(t, cmd, wait)
	ended(t, h, start, "output-closed", "before-output-closed.test")
}

// TestFaultAboxKilledKeepsTheProjectLive: abox, running a sandbox that masks .env, is killed,
// and a second `abox run` of the project starts while the warden is still finishing the first
// (its kill of the agent held back 20 s by a docker shim). The warden holds the project's
// live.lock, so the second run is refused as beside any sandbox that masks, not started beside
// an agent that is still running.
func TestFaultAboxKilledKeepsTheProjectLive(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	workspaceFile(t, h.Workspace, ".env", "TOKEN=canary-live\n")
	chownWorkspace(t, h)
	upProject(t, h, "killedlive", nil, "")
	shim := newDockerShim(t, "kill --signal KILL", 20*time.Second)
	cmd, wait := startAboxWith(t, h, h.Workspace, shim.env(h), inGroup, "run", heartbeatPrompt("before-killed-live.test"))
	waitWorkspaceFile(t, h.Workspace, "heartbeat")
	cmd.Process.Kill()
	wait()
	shim.waitPaused(t) // the warden is at its kill of the agent
	res := h.Abox("run", "true")
	if res.ExitCode != 3 || !strings.Contains(res.Stderr, "another sandbox of this project is live") {
		t.Errorf("a run beside the dead abox's agent: %s\nwant it refused while the warden holds the project", res)
	}
	if !pollUntil(endBound+20*time.Second, func() bool { return len(projectContainers(h)) == 0 }) {
		t.Errorf("containers left: %v", projectContainers(h))
	}
}

// TestNukeRightAfterRun: `abox nuke` the moment `abox run` returns, twenty times, with spare
// netds on: the after-run process is removing the run's finished netd and starting the next
// spare while nuke removes the project. Nothing of the project is left, and nuke never fails.
func TestNukeRightAfterRun(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(harness.SpareNetd(h.DefaultConfig()))
	h.WriteManifest("version: 1\nproject: nukeafter\nprofile: " + h.Profile + "\n")
	bin := harness.AboxBinary(t)
	for i := range 20 {
		if res := h.Abox("up", "--yes"); !res.OK() {
			t.Fatalf("round %d: abox up: %s", i, res)
		}
		for _, args := range [][]string{{"run", "true"}, {"nuke", "--yes"}} {
			cmd := exec.Command(bin, args...)
			cmd.Dir, cmd.Env = h.Workspace, h.Env()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("round %d: abox %s: %v\n%s", i, strings.Join(args, " "), err, out)
			}
		}
		waitAfterRunProcesses(t, h)
		if left := projectContainers(h); len(left) != 0 {
			t.Fatalf("round %d: nuke right after the run left %v", i, left)
		}
	}
}

// waitAfterRunProcesses waits until no after-run process (`abox spare-netd`) of the workspace
// is left.
func waitAfterRunProcesses(t *testing.T, h *harness.H) {
	t.Helper()
	running := func() bool {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if args := strings.Split(string(b), "\x00"); len(args) > 3 && args[1] == "spare-netd" && args[3] == h.Workspace {
				return true
			}
		}
		return false
	}
	if !pollUntil(time.Minute, func() bool { return !running() }) {
		t.Fatal("an after-run process of the project still runs a minute on")
	}
}
