//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/telemetry"
)

// Red team 3: attacks on "the sandbox never outlives the abox that started it" (issue 33) —
// the caught signals, the warden's takeover, the owner locks and the reap — from inside the
// sandbox (a prompt) and from the user's side (abox killed, hung up or blocked at an awkward
// moment). A test that fails shows a hole; each asserts the safe behaviour.

// waitWardensGone waits until no warden of the test's state directory is left: each finished
// the run it held.
func waitWardensGone(t *testing.T, h *harness.H, bound time.Duration) {
	t.Helper()
	if !pollUntil(bound, func() bool { return len(wardenPIDs(t, h)) == 0 }) {
		t.Fatalf("wardens %v still run %s on", wardenPIDs(t, h), bound)
	}
}

// TestAttackRedTeam3NetdStartedAfterTakeover: abox is killed (SIGKILL, the OOM killer) while
// its `docker run --detach` of netd is on its way — a docker CLI abox started, which is not
// killed with abox and goes on to start netd (the shim holds it 4 s, as a slow daemon would).
// The warden takes over at once, finds no netd yet, records the run and removes its owner
// lock; then netd comes up. Nothing then ends that netd: it is no run's any more, so the next
// `abox run` does not reap it. Safe: once the run is recorded, no container of it runs, and
// the next run leaves none either.
func TestAttackRedTeam3NetdStartedAfterTakeover(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3netd", nil, "")
	shim := newDockerShim(t, "run --detach", 4*time.Second)
	cmd, wait := startAboxWith(t, h, h.Workspace, shim.env(h), inGroup, "run", heartbeatPrompt("rt3-netd.test"))
	shim.waitPaused(t)
	if w := wardenPIDs(t, h); len(w) != 1 {
		t.Fatalf("want the run's one warden, found %v", w)
	}
	cmd.Process.Kill() // abox alone: the docker CLI it started (the shim) goes on
	wait()
	waitWardensGone(t, h, endBound)
	time.Sleep(8 * time.Second) // the held `docker run` reaches the daemon and starts netd
	runs := allRunRecordsQuiet(h)
	if len(runs) != 1 || runs[0].Outcome != "abox-killed" {
		t.Errorf("runs %+v, want the one run recorded as abox-killed", runs)
	}
	if left := runningProjectContainers(h); len(left) != 0 {
		t.Errorf("containers of the recorded run still running: %v", left)
		if c := doctorChecks(t, h)["sandbox.orphans"]; c.Status != doctor.OK {
			t.Logf("doctor's sandbox.orphans: %s %q", c.Status, c.Detail)
		}
	}
	if res := h.Abox("run", "true"); !res.OK() {
		t.Fatalf("the next run: %s", res)
	}
	if left := runningProjectContainers(h); len(left) != 0 {
		t.Errorf("containers still running after the project's next run: %v", left)
	}
}

// runningProjectContainers lists the project's running containers.
func runningProjectContainers(h *harness.H) []string {
	res := h.Docker("ps", "--filter", "label=abox.hash="+h.ProjectHash(), "--filter", "status=running", "--format", "{{.Names}}")
	return strings.Fields(res.Stdout)
}

// floodPrompt looks name up, then ignores every signal a terminal sends and, five times a
// second, appends to heartbeat and prints forty 8 KB tool uses: a run whose output nobody
// reads fills its pipe within a second.
func floodPrompt(name string) string {
	return "trap '' HUP INT TERM QUIT PIPE; claude net dns 127.0.0.1:53 " + name + " >/dev/null; touch looked-up; " +
		"big=$(head -c 8000 /dev/zero | tr '\\0' A); " +
		"while :; do date +%s%N >> heartbeat; for i in $(seq 40); do echo \"::tool_use name=Bash input={\\\"x\\\":\\\"$big\\\"}\"; done; sleep 0.2; done"
}

// TestAttackRedTeam3StdoutNotRead: `abox run … | less` left on its first page, or a terminal
// stopped with Ctrl-S: abox's standard output is open but nobody reads it, and the agent
// prints without end. abox blocks in its write of the agent's output. Then the user ends it
// with SIGTERM (or Ctrl-C). Safe: the run ends as at any SIGTERM — agent stopped, netd
// harvested, the run recorded as interrupted, no container left — within the usual bound.
func TestAttackRedTeam3StdoutNotRead(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3stdout", nil, "")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // never read until the test ends
	cmd, wait := startAboxWith(t, h, h.Workspace, nil, func(c *exec.Cmd) { c.Stdout = w; inGroup(c) }, "run", floodPrompt("rt3-stdout.test"))
	w.Close()
	waitWorkspaceFile(t, h.Workspace, "looked-up")
	waitWorkspaceFile(t, h.Workspace, "heartbeat")
	time.Sleep(3 * time.Second) // abox's output pipe is full: abox is in a write of the agent's output
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan harness.Result, 1)
	go func() { done <- wait() }()
	ended(t, h, start, "interrupted", "rt3-stdout.test")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("abox still runs after its run ended, its output unread")
	}
}

// TestAttackRedTeam3AgentCreatedAfterTakeover: abox is killed while its `docker create` of the
// agent is on its way (held 4 s by the shim, as a slow daemon would). The warden takes over at
// once: the agent does not exist yet, so its removal finds nothing, and netd's stop takes its
// 5 s grace; the create lands meanwhile, beside the netd still there. Safe: once the warden is
// done, no container of the run is left — not even a created agent, which keeps the attached
// secrets in its configuration and which no later run or reap would remove.
func TestAttackRedTeam3AgentCreatedAfterTakeover(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3create", nil, "")
	shim := newDockerShim(t, "", 0)
	addShimHook(t, shim, `if [ "$1" = create ] && mkdir `+shq(shim.dir+"/paused")+` 2>/dev/null; then sleep 4; fi`)
	cmd, wait := startAboxWith(t, h, h.Workspace, shim.env(h), inGroup, "run", heartbeatPrompt("rt3-create.test"))
	shim.waitPaused(t)
	cmd.Process.Kill() // abox alone: its `docker create` goes on
	wait()
	waitWardensGone(t, h, endBound)
	time.Sleep(8 * time.Second)
	runs := allRunRecordsQuiet(h)
	if len(runs) != 1 || runs[0].Outcome != "abox-killed" {
		t.Errorf("runs %+v, want the one run recorded as abox-killed", runs)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers of the recorded run left behind: %v", left)
	}
	if res := h.Abox("run", "true"); !res.OK() {
		t.Fatalf("the next run: %s", res)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers still there after the project's next run: %v", left)
	}
}

// TestAttackRedTeam3StdoutNotReadPastTimeout: as [TestAttackRedTeam3StdoutNotRead], abox's
// output is open and unread while the agent prints without end, but nobody signals abox: the
// run has a 5 s timeout. Safe: the run ends at its deadline (the warden's grace at most later)
// — agent stopped, netd harvested, recorded as a timeout, no container left.
func TestAttackRedTeam3StdoutNotReadPastTimeout(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3stdoutto", nil, "")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, _ = startAboxWith(t, h, h.Workspace, nil, func(c *exec.Cmd) { c.Stdout = w; inGroup(c) }, "run", "--timeout", "5s", floodPrompt("rt3-stdout-timeout.test"))
	w.Close()
	waitWorkspaceFile(t, h.Workspace, "looked-up")
	start := time.Now()
	time.Sleep(15 * time.Second) // the deadline and the warden's grace
	if pollUntil(15*time.Second, func() bool { return !heartbeatGrows(h) }) {
		t.Logf("the agent stopped %.1fs after it started; running now: %v", time.Since(start).Seconds(), runningProjectContainers(h))
	} else {
		t.Errorf("the agent still writes the workspace %.1fs after it started, past its 5 s timeout", time.Since(start).Seconds())
	}
	ended(t, h, start, "timeout", "rt3-stdout-timeout.test")
}

// orphan starts a heartbeat run and kills its abox and its warden together (`pkill -9 abox`):
// the run's agent goes on, and only a later abox of the project can end it. It returns the
// orphan's run id.
func orphan(t *testing.T, h *harness.H, name string) string {
	t.Helper()
	cmd, wait := startHeartbeat(t, h, name)
	wardens := wardenPIDs(t, h)
	if len(wardens) != 1 {
		t.Fatalf("want the run's one warden, found %v", wardens)
	}
	cmd.Process.Kill()
	syscall.Kill(wardens[0], syscall.SIGKILL)
	wait()
	if !heartbeatGrows(h) {
		t.Fatal("the orphan's agent stopped by itself")
	}
	return runOf(t, h)
}

// TestAttackRedTeam3ReapInterrupted: an orphan (abox and warden killed together) is being
// reaped by the project's next `abox run` when the user presses Ctrl-C — here while the reap's
// `docker kill` of the orphan's agent is held by the shim. The reap follows the command's
// context: every step of the orphan's teardown then fails at once, yet the orphan is recorded
// as finished and its owner lock removed, so no later run reaps it again while its agent goes
// on writing the workspace. Safe: an interrupted reap either finishes the orphan or leaves it
// to the next run — the agent stops at the latest when the project's next run starts.
func TestAttackRedTeam3ReapInterrupted(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3reapint", nil, "")
	id := orphan(t, h, "rt3-reap-interrupted.test")
	shim := newDockerShim(t, "kill --signal KILL", 10*time.Second)
	cmd, wait := startAboxWith(t, h, h.Workspace, shim.env(h), inGroup, "run", "true")
	shim.waitPaused(t) // the reap is at its kill of the orphan's agent
	cmd.Process.Signal(syscall.SIGINT)
	res := waitBounded(t, cmd, wait)
	t.Logf("the interrupted run: exit %d\n%s", res.ExitCode, res.Stderr)
	if res := h.Abox("run", "true"); !res.OK() {
		t.Fatalf("the project's next run: %s", res)
	}
	if pollUntil(10*time.Second, func() bool { return !heartbeatGrows(h) }) {
		return
	}
	t.Errorf("the orphan %s's agent still writes the workspace after the project's next run", id)
	for _, r := range allRunRecordsQuiet(h) {
		if r.ID == id {
			t.Logf("the orphan is recorded as %s, notes %q", r.Outcome, r.Notes)
		}
	}
	if left := runningProjectContainers(h); len(left) != 0 {
		t.Logf("running: %v", left)
	}
}

// TestAttackRedTeam3KilledRunAccounting: the agent makes tool calls (three Bash tool uses) and
// then abox is killed. The warden records the run; its record must not say less than abox's
// would have: the session and the tool calls the transcript holds.
func TestAttackRedTeam3KilledRunAccounting(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3account", nil, "")
	prompt := "for i in 1 2 3; do echo '::tool_use name=Bash input={\"command\":\"ls\"}'; done; " + heartbeatPrompt("rt3-account.test")
	cmd, wait := startAboxWith(t, h, h.Workspace, nil, inGroup, "run", prompt)
	waitWorkspaceFile(t, h.Workspace, "heartbeat")
	start := time.Now()
	cmd.Process.Kill()
	wait()
	run := ended(t, h, start, "abox-killed", "rt3-account.test")
	transcript, _ := os.ReadFile(run.Transcript)
	if n := strings.Count(string(transcript), `"type":"tool_use"`); run.ToolCalls != n || n == 0 {
		t.Errorf("the record counts %d tool calls; the transcript holds %d", run.ToolCalls, n)
	}
	if run.SessionID == "" {
		t.Errorf("the record has no session id; the transcript's init names it")
	}
}

// TestAttackRedTeam3WardenKilledAlone: the warden alone is killed mid-run (the OOM killer's
// pick, a stray kill). abox goes on; when its terminal then closes, it ends the run as at any
// hangup, and the record says that the warden had gone.
func TestAttackRedTeam3WardenKilledAlone(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3warden", nil, "")
	cmd, wait := startHeartbeat(t, h, "rt3-warden.test")
	wardens := wardenPIDs(t, h)
	if len(wardens) != 1 {
		t.Fatalf("want the run's one warden, found %v", wardens)
	}
	syscall.Kill(wardens[0], syscall.SIGKILL)
	if !heartbeatGrows(h) {
		t.Fatal("the agent stopped when its warden was killed")
	}
	start := time.Now()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGHUP)
	waitBounded(t, cmd, wait)
	run := ended(t, h, start, "hangup", "rt3-warden.test")
	if !strings.Contains(strings.Join(run.Notes, "\n"), "warden ended before the run did") {
		t.Errorf("notes %q do not say the warden had gone", run.Notes)
	}
}

// TestAttackRedTeam3ConcurrentRunKilled: two `abox run` of one project (no masks, so they may
// run side by side). The second starts and finishes while the first runs: it must not take the
// first, whose abox lives, for an orphan. Then the first abox is killed: its warden ends it,
// and the project's next run finds no stale lock.
func TestAttackRedTeam3ConcurrentRunKilled(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3concurrent", nil, "")
	cmd, wait := startHeartbeat(t, h, "rt3-concurrent.test")
	if res := h.Abox("run", "touch second-ran"); !res.OK() || strings.Contains(res.Stderr, "finished run") {
		t.Fatalf("the second run beside the first: %s", res)
	}
	if !heartbeatGrows(h) {
		t.Fatal("the first run's agent stopped when the second run ran")
	}
	start := time.Now()
	cmd.Process.Kill()
	wait()
	if !pollUntil(endBound, func() bool { return !heartbeatGrows(h) }) {
		t.Fatalf("the first run's agent still writes the workspace %s after its abox was killed", endBound)
	}
	if !pollUntil(endBound, func() bool { return len(wardenPIDs(t, h)) == 0 && len(projectContainers(h)) == 0 }) {
		t.Fatalf("containers %v, wardens %v", projectContainers(h), wardenPIDs(t, h))
	}
	outcomes := map[string]int{}
	for _, r := range allRunRecords(t, h) {
		outcomes[r.Outcome]++
	}
	if outcomes["abox-killed"] != 1 || outcomes["exited"] != 1 {
		t.Errorf("outcomes %v, want one abox-killed and one exited", outcomes)
	}
	t.Logf("the killed run ended %.1fs after its abox", time.Since(start).Seconds())
	if res := h.Abox("run", "true"); !res.OK() || strings.Contains(res.Stderr, "finished run") {
		t.Errorf("the project's next run: %s", res)
	}
	if ls, _ := os.ReadDir(h.StateHome + "/projects/" + h.ProjectHash() + "/owners"); len(ls) != 0 {
		t.Errorf("owner locks left: %v", ls)
	}
}

// TestAttackRedTeam3NukeDuringRun: `abox nuke` while a run's agent writes the workspace. The
// run's containers go; abox must then end within the bound, its agent no longer writing, and
// the run be recorded.
func TestAttackRedTeam3NukeDuringRun(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3nuke", nil, "")
	cmd, wait := startHeartbeat(t, h, "rt3-nuke.test")
	start := time.Now()
	res := h.Abox("nuke", "--yes")
	t.Logf("nuke: %s", res)
	r := waitBounded(t, cmd, wait)
	t.Logf("the run: exit %d\n%s", r.ExitCode, r.Stderr)
	if heartbeatGrows(h) {
		t.Error("the agent still writes the workspace after nuke")
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	if !pollUntil(endBound, func() bool { return len(wardenPIDs(t, h)) == 0 }) {
		t.Errorf("wardens left: %v", wardenPIDs(t, h))
	}
	runs := allRunRecordsQuiet(h)
	if len(runs) != 1 {
		t.Fatalf("runs %+v, want the one run recorded", runs)
	}
	t.Logf("recorded as %s (exit %d), notes %q, %.1fs after nuke began", runs[0].Outcome, runs[0].ExitCode, runs[0].Notes, time.Since(start).Seconds())
	if runs[0].Outcome == "" {
		t.Errorf("no outcome")
	}
}

// TestAttackRedTeam3SpareClaimedThenKilled: with spare netds on, a run claims the project's
// spare (taking its owner lock) and abox is killed right then, before its warden exists — in
// the mask walk of a workspace of 100 000 files, which widens that moment. Nothing guards the
// claimed spare: doctor must name it, and the project's next run must remove it.
func TestAttackRedTeam3SpareClaimedThenKilled(t *testing.T) {
	t.Parallel()
	h := upSpare(t, "rt3spare")
	mustAbox(t, h, "run", "true")
	rec := waitSpare(t, h)
	waitAfterRunProcesses(t, h)
	bulk := h.Workspace + "/bulk"
	os.Mkdir(bulk, 0o755)
	for i := range 100 {
		d := bulk + "/" + strconv.Itoa(i)
		os.Mkdir(d, 0o755)
		for j := range 1000 {
			os.WriteFile(d+"/"+strconv.Itoa(j), nil, 0o644)
		}
	}
	chownTree(t, h.Workspace, 1000, 1000)
	lock := h.StateHome + "/projects/" + h.ProjectHash() + "/owners/" + rec.ID + ".lock"
	cmd, wait := startAboxWith(t, h, h.Workspace, nil, inGroup, "run", heartbeatPrompt("rt3-spare.test"))
	deadline := time.Now().Add(time.Minute)
	for !fileExists(lock, "") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Kill()
	wardens := wardenPIDs(t, h)
	wait()
	if !fileExists(lock, "") {
		t.Fatalf("the run never claimed the spare %s", rec.Netd)
	}
	t.Logf("abox killed with the spare claimed; wardens then: %v; containers: %v", wardens, runningProjectContainers(h))
	if fileExists(h.Workspace, "heartbeat") {
		t.Log("the agent had started")
	}
	if len(wardens) == 0 {
		if c := doctorChecks(t, h)["sandbox.orphans"]; c.Status != doctor.Fail || !strings.Contains(c.Detail, rec.ID) {
			t.Errorf("doctor's sandbox.orphans: %s %q, want it to name run %s", c.Status, c.Detail, rec.ID)
		}
	}
	res := h.Abox("run", "true")
	if !res.OK() {
		t.Fatalf("the project's next run: %s", res)
	}
	t.Logf("the next run: %s", res.Stderr)
	waitAfterRunProcesses(t, h)
	if !pollUntil(endBound, func() bool { return !strings.Contains(strings.Join(projectContainers(h), " "), rec.ID) }) {
		t.Errorf("the claimed spare's containers are still there after the next run: %v", projectContainers(h))
	}
}

// TestAttackRedTeam3TakeoverDaemonAway: abox is killed while the Docker daemon does not answer
// (restarting, overloaded): for 15 s every docker call fails, the warden's among them. The
// warden's takeover cannot kill the agent nor remove anything, yet it records the run as
// finished and removes the owner lock, so once the daemon is back nothing ends the agent: no
// later run reaps a run that has no lock. Safe: a takeover that could not end the agent
// leaves the run to be finished — at the latest by the project's next run.
func TestAttackRedTeam3TakeoverDaemonAway(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3daemon", nil, "")
	shim := newDockerShim(t, "", 0)
	away := shim.dir + "/daemon-away"
	addShimHook(t, shim, `if [ -e `+shq(away)+` ]; then echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1; fi`)
	cmd, wait := startAboxWith(t, h, h.Workspace, shim.env(h), inGroup, "run", heartbeatPrompt("rt3-daemon.test"))
	waitWorkspaceFile(t, h.Workspace, "heartbeat")
	id := runOf(t, h)
	os.WriteFile(away, nil, 0o644)
	cmd.Process.Kill()
	wait()
	time.Sleep(15 * time.Second)
	os.Remove(away)
	for _, r := range allRunRecordsQuiet(h) {
		t.Logf("run %s recorded as %s while the daemon was away; notes %q", r.ID, r.Outcome, r.Notes)
	}
	t.Logf("wardens: %v", wardenPIDs(t, h))
	if res := h.Abox("run", "true"); !res.OK() {
		t.Fatalf("the project's next run: %s", res)
	}
	if !pollUntil(endBound, func() bool { return !heartbeatGrows(h) }) {
		t.Errorf("run %s's agent still writes the workspace after the daemon came back and the project's next run ran", id)
	}
}

// TestAttackRedTeam3KilledRunMaskSwap: the agent swaps .git for a copy with a planted
// executable hook (as in [TestAttackMaskGitSwap]) and also plants a Makefile target, then
// keeps running; abox is killed. The warden's takeover must do what abox's teardown does: move
// the planted hooks into the run's quarantine, record the mask event and the
// execution-adjacent change.
func TestAttackRedTeam3KilledRunMaskSwap(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	ws := h.Workspace
	workspaceFile(t, ws, ".git/HEAD", "ref: refs/heads/main\n")
	workspaceFile(t, ws, ".git/config", "[core]\n\trepositoryformatversion = 0\n")
	workspaceFile(t, ws, ".git/hooks/pre-commit.sample", "#!/bin/sh\nexit 0\n")
	workspaceFile(t, ws, "Makefile", "all:\n\ttrue\n")
	chownWorkspace(t, h)
	upProject(t, h, "rt3maskswap", nil, "")
	prompt := `mv .git .git.moved && mkdir .git && cp -a .git.moved/. .git/ && chmod u+w .git/hooks; ` +
		`printf '#!/bin/sh\necho pwned\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout; ` +
		`printf 'all:\n\tcurl evil\n' > Makefile; ` + heartbeatPrompt("rt3-maskswap.test")
	cmd, wait := startAboxWith(t, h, ws, nil, inGroup, "run", prompt)
	waitWorkspaceFile(t, ws, "heartbeat")
	start := time.Now()
	cmd.Process.Kill()
	wait()
	run := ended(t, h, start, "abox-killed", "rt3-maskswap.test")
	if _, err := os.Lstat(ws + "/.git/hooks/post-checkout"); err == nil {
		t.Error("the planted hook is still in the workspace after the warden's takeover")
	}
	if len(run.Masks) != 1 || run.Masks[0].Kind != telemetry.MaskPlanted || run.Masks[0].Mask != ".git/hooks" {
		t.Errorf("the record's masks: %+v, want the planted .git/hooks", run.Masks)
	}
	if !strings.Contains(fmt.Sprint(run.ExecChanges), "Makefile") {
		t.Errorf("the record's execution-adjacent changes %+v lack the Makefile", run.ExecChanges)
	}
}

// TestAttackRedTeam3KilledDuringHarvest: the agent exits by itself, and abox is killed in its
// teardown, while it copies netd's logs out (the shim holds `docker cp` 5 s). The warden
// finishes the teardown abox began: the run is recorded once, as abox saw it end (exited),
// with netd's logs and the name the agent looked up in the review queue.
func TestAttackRedTeam3KilledDuringHarvest(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "rt3harvest", nil, "")
	shim := newDockerShim(t, "cp abox-netd-", 5*time.Second)
	cmd, wait := startAboxWith(t, h, h.Workspace, shim.env(h), inGroup, "run", "claude net dns 127.0.0.1:53 rt3-harvest.test >/dev/null; true")
	shim.waitPaused(t)
	start := time.Now()
	cmd.Process.Kill()
	wait()
	waitWardensGone(t, h, endBound)
	run := ended(t, h, start, "exited", "rt3-harvest.test")
	if n := len(allRunRecords(t, h)); n != 1 {
		t.Errorf("%d runs recorded, want one", n)
	}
	if run.ExitCode != 0 {
		t.Errorf("exit code %d, want the agent's 0", run.ExitCode)
	}
}
