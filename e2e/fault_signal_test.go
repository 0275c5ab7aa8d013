//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// Faults of abox itself: SIGINT and SIGTERM at every phase of a run, and a netd whose loaded
// ruleset is not the rendered one. A docker shim on abox's PATH holds abox at an exact docker
// call, so each signal lands in the phase it names.

// signalPhase is where in a run a signal lands: the docker call the shim holds (none: while the
// agent runs), and whether netd was up by then, so that its logs must have been harvested.
type signalPhase struct {
	name    string
	pauseAt string
	pause   time.Duration
	netdUp  bool
}

var signalPhases = []signalPhase{
	// Before anything exists: nothing is recorded, as no sandbox was started.
	{"preflight", "network inspect", 20 * time.Second, false},
	// A `docker run` of netd already sent runs to its end (abox then removes what it made).
	{"netd-create", "run --detach", 2 * time.Second, true},
	{"before-ready", "logs --follow", 20 * time.Second, true},
	{"during-verify", "nft -j list ruleset", 20 * time.Second, true},
	{"during-agent", "", 0, true},
	// Teardown ignores the signal and finishes; the shim only delays it.
	{"during-teardown", "kill --signal USR1", 3 * time.Second, true},
}

// TestFaultSignals: SIGINT and SIGTERM to `abox run` in its preflight, while netd is created,
// while it starts, while its ruleset is verified, while the agent runs and during teardown;
// SIGQUIT and SIGHUP while the agent runs. Every time abox ends within a minute and leaves no
// container, network attachment or staged file. Once a sandbox was started, the run is
// recorded, an interruption before the agent is reported as such (not as a refusal), and
// netd's logs are harvested.
func TestFaultSignals(t *testing.T) {
	h := harness.Setup(t)
	upProject(t, h, "signals", nil, "")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP} {
		for _, ph := range signalPhases {
			if (sig == syscall.SIGQUIT || sig == syscall.SIGHUP) && ph.name != "during-agent" {
				continue // the same path as SIGINT's once the signal is taken
			}
			name := strings.ToLower(strings.TrimPrefix(sigName(sig), "SIG")) + "-" + ph.name
			t.Run(name, func(t *testing.T) { signalRun(t, h, sig, ph) })
		}
	}
	// abox run creates no network; the project's own is intact and holds no container.
	if n := h.MustDocker("network", "inspect", "--format", "{{len .Containers}}", h.Network); n != "0" {
		t.Errorf("%s containers are still attached to %s", n, h.Network)
	}
}

func sigName(s syscall.Signal) string { return unix.SignalName(s) }

func signalRun(t *testing.T, h *harness.H, sig syscall.Signal, ph signalPhase) {
	before := runCount(h)
	shim := newDockerShim(t, ph.pauseAt, ph.pause)
	prompt := "claude net dns 127.0.0.1:53 signal.test >/dev/null; sleep 120"
	if ph.name == "during-teardown" {
		prompt = "claude net dns 127.0.0.1:53 signal.test >/dev/null; true"
	}
	cmd, wait := startAbox(t, h, h.Workspace, shim.env(h), "run", prompt)
	if ph.pauseAt != "" {
		shim.waitPaused(t)
	} else {
		waitRunning(t, h, "agent")
		time.Sleep(time.Second)
	}
	start := time.Now()
	cmd.Process.Signal(sig)
	res := wait()
	if d := time.Since(start); d > time.Minute {
		t.Errorf("abox took %s to end after %s", d.Round(time.Second), sigName(sig))
	}
	if strings.Contains(res.Stderr, "panic") || strings.Contains(res.Stderr, "goroutine ") {
		t.Errorf("abox crashed:\n%s", res.Stderr)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v\n%s", left, res)
		h.Docker(append([]string{"rm", "-f"}, left...)...)
	}
	if left := stagedFiles(h.StateHome); len(left) != 0 {
		t.Errorf("staged files left: %v", left)
	}
	if ph.name == "preflight" {
		if res.ExitCode == 0 || runCount(h) != before || !strings.Contains(res.Stderr, "error: interrupted") || strings.Contains(res.Stderr, "↳") {
			t.Errorf("signal in preflight: %s; want \"error: interrupted\" without a hint, and no run recorded", res)
		}
		return
	}
	runs := runRecords(t, h)
	if len(runs) != before+1 {
		t.Fatalf("%d runs recorded, want %d:\n%s", len(runs), before+1, res)
	}
	run := runs[len(runs)-1]
	want := "interrupted"
	switch {
	case ph.name == "during-teardown":
		want = "exited" // the agent had finished; the signal only hurried nothing
	case sig == syscall.SIGHUP:
		want = "hangup"
	}
	if run["outcome"] != want {
		t.Errorf("outcome %v, want %s (exit %d):\n%s", run["outcome"], want, res.ExitCode, res.Stderr)
	}
	if want != "exited" && res.ExitCode == 0 {
		t.Errorf("abox exited 0 after %s before the agent finished", sigName(sig))
	}
	events := filepath.Join(run["run_dir"].(string), "netd", policy.EventLog)
	if _, err := os.Stat(events); (err == nil) != ph.netdUp {
		t.Errorf("netd's harvested %s: %v, want harvested %v", policy.EventLog, err, ph.netdUp)
	}
}

// runCount is the number of runs in the project's runs.jsonl, 0 when it does not exist.
func runCount(h *harness.H) int {
	data, _ := os.ReadFile(filepath.Join(h.StateHome, "projects", h.ProjectHash(), "runs.jsonl"))
	return strings.Count(string(data), "\n")
}

// TestFaultLoadedPolicyDiffers: netd comes up but the ruleset in its namespace is not the one
// rendered (an extra accept rule, or no table at all, put there between load and read-back).
// abox refuses with exit 3, never starts the agent, tears everything down and records the run
// as refused.
func TestFaultLoadedPolicyDiffers(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "policydiff", nil, "")
	for name, change := range map[string]string{
		"extra-accept": "insert rule inet abox output counter accept",
		"no-table":     "delete table inet abox",
	} {
		t.Run(name, func(t *testing.T) {
			before := runCount(h)
			shim := newDockerShim(t, "", 0)
			// The shim runs the change as root in netd (which holds NET_ADMIN) right before
			// abox's read-back: `exec --user 0 <netd> /usr/sbin/nft -j list ruleset`.
			hook := `if [[ " $* " == *"nft -j list ruleset"* ]]; then ` + shq(shim.real) + ` exec --user 0 "$4" /usr/sbin/nft ` + change + `; fi`
			addShimHook(t, shim, hook)
			_, wait := startAbox(t, h, h.Workspace, shim.env(h), "run", "touch AGENT-RAN")
			res := wait()
			if res.ExitCode != 3 || !strings.Contains(res.Stderr, "differs from netpolicy.nft") {
				t.Errorf("abox run: %s; want exit 3 naming the ruleset", res)
			}
			if fileExists(h.Workspace, "AGENT-RAN") {
				t.Error("the agent ran")
			}
			if slices.ContainsFunc(shim.calls(), func(c string) bool { return strings.HasPrefix(c, "start ") }) {
				t.Errorf("abox started a container: %v", shim.calls())
			}
			if left := projectContainers(h); len(left) != 0 {
				t.Errorf("containers left: %v", left)
			}
			runs := runRecords(t, h)
			if len(runs) != before+1 || runs[len(runs)-1]["outcome"] != "refused" {
				b, _ := json.Marshal(runs)
				t.Errorf("runs = %s, want one more, refused", b)
			}
		})
	}
}

// addShimHook inserts a bash line that runs before the shim execs the real docker.
func addShimHook(t *testing.T, s *dockerShim, hook string) {
	t.Helper()
	p := filepath.Join(s.dir, "docker")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Replace(string(data), "\nexec ", "\n"+hook+"\nexec ", 1)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}
