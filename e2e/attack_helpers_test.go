//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
)

// Helpers of the attack, fault and load tests. The attacks are prompts to the stand-in hostile
// agent; each probe prints "name {json}" (see [probes]). Every address they aim at is one of the
// test's own containers, loopback, or this machine's bridge addresses.

// attackRun runs a prompt that must exit 0 and returns the agent's output and its probes.
// Under ABOX_E2E_RUNTIME=runsc it also checks that the agent ran under gVisor.
func attackRun(t *testing.T, h *harness.H, script ...string) (string, map[string]probeResult) {
	t.Helper()
	gvisor := agentRuntime(t) == "runsc"
	if gvisor {
		script = append([]string{kernelProbe}, script...)
	}
	res := h.Abox("run", strings.Join(script, "\n"))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	out := agentOutput(res.Stdout)
	if gvisor {
		wantGVisorKernel(t, out)
	}
	return out, probes(t, out)
}

// agentRuntime is [harness.AgentRuntime], failing the test on a bad $ABOX_E2E_RUNTIME.
func agentRuntime(t *testing.T) string {
	t.Helper()
	rt, err := harness.AgentRuntime()
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// kernelProbe prints the kernel release the agent sees, for [wantGVisorKernel].
const kernelProbe = `echo "agent-kernel $(uname -r)"`

// wantGVisorKernel checks, in the output of a run that began with kernelProbe, that the agent's
// kernel was not this machine's: gVisor's Sentry answers uname with a release of its own.
func wantGVisorKernel(t *testing.T, out string) {
	t.Helper()
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var host []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		host = append(host, byte(c))
	}
	for _, l := range strings.Split(out, "\n") {
		if rel, ok := strings.CutPrefix(l, "agent-kernel "); ok {
			if rel = strings.TrimSpace(rel); rel == "" || rel == string(host) {
				t.Errorf("the agent saw kernel %q, this machine's (%s): it did not run under gVisor", rel, host)
			}
			return
		}
	}
	t.Errorf("no agent-kernel line in the agent's output: the kernel probe did not run\n%s", out)
}

// refusedWithPrefix checks that every probe whose name starts with prefix was refused, and that
// there was at least one.
func refusedWithPrefix(t *testing.T, got map[string]probeResult, prefix string) {
	t.Helper()
	n := 0
	for name, p := range got {
		if strings.HasPrefix(name, prefix) {
			n++
			if p.OK {
				t.Errorf("%s: %+v, want it refused", name, p)
			}
		}
	}
	if n == 0 {
		t.Errorf("no probe named %s*: the attack did not run", prefix)
	}
}

// shellProbe is a bash function for prompts: `try NAME CMD…` runs CMD and prints NAME with
// {"ok":true} when it succeeded, {"ok":false,"error":…} with its first line of stderr otherwise.
const shellProbe = `try() { local n=$1; shift; local e; if e=$("$@" 2>&1 >/dev/null); then echo "$n {\"ok\":true}"; ` +
	`else e=$(printf '%s' "$e" | head -1 | tr -d '"\\'); echo "$n {\"ok\":false,\"error\":\"$e\"}"; fi; }`

// dockerShim is a `docker` placed first on abox's PATH: it appends every argv to argv.log and,
// when an argv contains pauseAt, touches "paused" and sleeps before running the real docker.
// It lets a test see every docker call abox makes and stop abox at an exact phase of a run.
type dockerShim struct {
	dir  string
	real string
}

// newDockerShim writes the shim; pauseAt "" never pauses.
func newDockerShim(t *testing.T, pauseAt string, pause time.Duration) *dockerShim {
	t.Helper()
	real, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal(err)
	}
	s := &dockerShim{dir: t.TempDir(), real: real}
	script := `#!/bin/bash
printf '%s\n' "$*" >> ` + shq(filepath.Join(s.dir, "argv.log")) + `
pause=` + shq(pauseAt) + `
if [ -n "$pause" ] && [[ " $* " == *"$pause"* ]] && mkdir ` + shq(filepath.Join(s.dir, "paused")) + ` 2>/dev/null; then
  sleep ` + strconv.Itoa(int(pause.Seconds())) + `
fi
exec ` + shq(real) + ` "$@"
`
	if err := os.WriteFile(filepath.Join(s.dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// env returns abox's environment with the shim first on PATH.
func (s *dockerShim) env(h *harness.H) []string {
	var out []string
	for _, kv := range h.Env() {
		if strings.HasPrefix(kv, "PATH=") {
			kv = "PATH=" + s.dir + ":" + strings.TrimPrefix(kv, "PATH=")
		}
		out = append(out, kv)
	}
	return out
}

// calls returns every docker argv abox ran so far, one string each.
func (s *dockerShim) calls() []string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "argv.log"))
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// waitPaused waits until the shim paused abox.
func (s *dockerShim) waitPaused(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(s.dir, "paused")); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("abox never reached the paused docker call; calls so far:\n%s", strings.Join(s.calls(), "\n"))
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startAbox starts abox in dir with env (nil: the harness's) and returns the command and a func
// that waits for it.
func startAbox(t *testing.T, h *harness.H, dir string, env []string, args ...string) (*exec.Cmd, func() harness.Result) {
	t.Helper()
	return startAboxWith(t, h, dir, env, nil, args...)
}

// startAboxWith is [startAbox] with setup applied to the command before it starts (nil: none).
func startAboxWith(t *testing.T, h *harness.H, dir string, env []string, setup func(*exec.Cmd), args ...string) (*exec.Cmd, func() harness.Result) {
	t.Helper()
	if env == nil {
		env = h.Env()
	}
	cmd := exec.Command(harness.AboxBinary(t), args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if setup != nil {
		setup(cmd)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, func() harness.Result {
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
		h.WaitAfterRun() // as [harness.H.AboxIn] does
		return harness.Result{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: code}
	}
}

// stagedFiles lists the temporary files abox's atomic writes and the gateway's env handover
// leave behind only when they are interrupted.
func stagedFiles(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		n := d.Name()
		if strings.Contains(n, ".tmp-") || strings.HasPrefix(n, ".gateway-env-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// workspaceFile writes a file into a workspace as the agent's uid would own it.
func workspaceFile(t *testing.T, dir, rel, data string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(p, 1000, 1000)
	return p
}

// readWorkspace returns a workspace file's content, "" when it is absent.
func readWorkspace(dir, rel string) string {
	data, _ := os.ReadFile(filepath.Join(dir, rel))
	return string(data)
}

// pollUntil polls cond until it holds or the timeout passes, and reports whether it held.
func pollUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

// bridgeGateway returns the test network's gateway address: the host on that bridge.
func bridgeGateway(h *harness.H) string {
	return h.MustDocker("network", "inspect", "--format", "{{(index .IPAM.Config 0).Gateway}}", h.Network)
}

// docker0Addr returns the host's address on docker0, or "" when there is none.
func docker0Addr() string {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show", "docker0").Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	for i, w := range f {
		if w == "inet" && i+1 < len(f) {
			return strings.Split(f[i+1], "/")[0]
		}
	}
	return ""
}

// probesOK checks that the named probes got through.
func probesOK(t *testing.T, got map[string]probeResult, names ...string) {
	t.Helper()
	for _, n := range names {
		if p, ok := got[n]; !ok || !p.OK {
			t.Errorf("%s: %+v (present %v), want it through", n, p, ok)
		}
	}
}

// probesRefused checks that the named probes ran and were refused.
func probesRefused(t *testing.T, got map[string]probeResult, names ...string) {
	t.Helper()
	for _, n := range names {
		if p, ok := got[n]; !ok || p.OK {
			t.Errorf("%s: %+v (present %v), want it refused", n, p, ok)
		}
	}
}

// probesRCode checks that the named DNS probes got rcode and no answer.
func probesRCode(t *testing.T, got map[string]probeResult, rcode string, names ...string) {
	t.Helper()
	for _, n := range names {
		if p := got[n]; p.RCode != rcode || len(p.Answers) != 0 {
			t.Errorf("%s: %+v, want %s and no answer", n, p, rcode)
		}
	}
}

// harvested decodes one of netd's logs harvested from the project's last run.
func harvested[T any](t *testing.T, h *harness.H, name string) []T {
	t.Helper()
	runs := runRecords(t, h)
	data, err := os.ReadFile(filepath.Join(runs[len(runs)-1]["run_dir"].(string), "netd", name))
	if err != nil {
		t.Fatalf("reading the harvested %s: %v", name, err)
	}
	var out []T
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var v T
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%s line %q: %v", name, l, err)
		}
		out = append(out, v)
	}
	return out
}

// waitWorkspaceFile waits for the agent to create a file in a workspace.
func waitWorkspaceFile(t *testing.T, dir, rel string) {
	t.Helper()
	if !pollUntil(2*time.Minute, func() bool { return fileExists(dir, rel) }) {
		t.Fatalf("the agent never created %s", rel)
	}
}

func fileExists(dir, rel string) bool {
	_, err := os.Stat(filepath.Join(dir, rel))
	return err == nil
}
