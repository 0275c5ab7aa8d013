//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
)

// The sandbox runtime, end to end on the real daemon: a prompt is a bash script run by the
// stand-in claude as the agent; everything it reaches is our own test containers.

func TestRunWritesWorkspaceAndRecords(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "ws", nil, "")
	res := h.Abox("run", `echo "from the agent" > out.txt; id -u; echo done`)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	data, err := os.ReadFile(filepath.Join(h.Workspace, "out.txt"))
	if err != nil || string(data) != "from the agent\n" {
		t.Errorf("workspace file = %q, %v; want the agent's line", data, err)
	}
	if got := strings.TrimSpace(agentOutput(res.Stdout)); got != "1000\ndone" {
		t.Errorf("agent output = %q, want uid 1000 and done", got)
	}
	runs := runRecords(t, h)
	if len(runs) != 1 || runs[0]["exit_code"] != float64(0) || runs[0]["outcome"] != "exited" {
		t.Fatalf("runs.jsonl = %v, want one exited run with exit 0", runs)
	}
	transcript, _ := os.ReadFile(runs[0]["transcript"].(string))
	if !strings.Contains(string(transcript), `"type":"result"`) || runs[0]["session_id"] == "" {
		t.Errorf("transcript %q / session %v: want the result event and a session id", transcript, runs[0]["session_id"])
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left after the run: %v", left)
	}
	// The exit status is the agent's.
	res = h.Abox("run", "exit 7")
	if res.ExitCode != 7 {
		t.Errorf("abox run 'exit 7' exited %d, want 7:\n%s", res.ExitCode, res)
	}
	if runs := runRecords(t, h); len(runs) != 2 || runs[1]["exit_code"] != float64(7) {
		t.Errorf("second run record = %v, want exit_code 7", runs[len(runs)-1])
	}
	// -q prints only the summary; the agent's output is in the transcript.
	res = h.Abox("run", "-q", "echo quiet-marker")
	runs = runRecords(t, h)
	if !res.OK() || strings.Contains(res.Stdout+res.Stderr, "quiet-marker") || !strings.Contains(res.Stdout+res.Stderr, "· exited · exit 0") {
		t.Errorf("abox run -q: want the summary and not the agent's output:\n%s", res)
	}
	if transcript, _ := os.ReadFile(runs[len(runs)-1]["transcript"].(string)); !strings.Contains(string(transcript), "quiet-marker") {
		t.Errorf("the -q run's transcript lacks the agent's output: %q", transcript)
	}
}

func TestEgressHeldAtTheBoundary(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	allowed := h.StartServer("allowed.test")
	other := h.StartServer("other.test")
	upProject(t, h, "egress", []string{"allowed.test"}, "")
	bridge := h.MustDocker("network", "inspect", "--format", "{{(index .IPAM.Config 0).Gateway}}", h.Network)
	script := strings.Join([]string{
		`echo "allowed $(claude net tls allowed.test:443 allowed.test)"`,
		`echo "curl-allowed {\"ok\":$(curl -sS --max-time 10 https://allowed.test/ >/dev/null && echo true || echo false)}"`,
		`echo "unlisted $(claude net dns 127.0.0.1:53 other.test)"`,
		`getent hosts other.test >/dev/null; echo "getent {\"ok\":$([ $? = 0 ] && echo true || echo false)}"`,
		`getent hosts other.test >/dev/null; getent hosts other.test >/dev/null`,
		`echo "docker-dns-udp $(claude net dns 127.0.0.11:53 other.test)"`,
		`echo "docker-dns-tcp $(claude net dns 127.0.0.11:53 other.test A tcp)"`,
		`echo "ip-literal-tls $(claude net tls ` + other.IP + `:443 -)"`,
		`echo "ip-literal-sni $(claude net tls ` + other.IP + `:443 other.test)"`,
		`echo "ip-tcp-2222 $(claude net tcp ` + other.IP + `:2222 hi)"`,
		`echo "ip-udp-2222 $(claude net udp ` + other.IP + `:2222 hi)"`,
		`echo "ip-http $(claude net http ` + other.IP + `:80 other.test)"`,
		`echo "ipv6-mapped $(claude net tcp [::ffff:` + other.IP + `]:2222 hi)"`,
		`echo "bridge-22 $(claude net tcp ` + bridge + `:22)"`,
		`echo "bridge-2375 $(claude net tcp ` + bridge + `:2375)"`,
		`echo "other-dns-server $(claude net dns ` + other.IP + `:53 exfil.other.test)"`,
		`echo "ipv6-off {\"ok\":$([ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null)" = 0 ] && echo true || echo false)}"`,
	}, "\n")
	res := h.Abox("run", script)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	for _, name := range []string{"allowed", "curl-allowed"} {
		if !got[name].OK {
			t.Errorf("%s: %+v, want it to get through", name, got[name])
		}
	}
	if !strings.Contains(got["allowed"].Reply, "sni=allowed.test") {
		t.Errorf("allowed reply %q, want the allowed server's answer", got["allowed"].Reply)
	}
	if p := got["unlisted"]; p.OK || p.RCode != "NXDOMAIN" {
		t.Errorf("unlisted name: %+v, want NXDOMAIN", p)
	}
	for _, name := range []string{"getent", "docker-dns-udp", "docker-dns-tcp", "ip-literal-tls", "ip-literal-sni",
		"ip-tcp-2222", "ip-udp-2222", "ipv6-mapped", "bridge-22", "bridge-2375", "other-dns-server", "ipv6-off"} {
		if p, ok := got[name]; !ok || p.OK {
			t.Errorf("%s: %+v (present %v), want it refused", name, p, ok)
		}
	}
	// Plain HTTP reaches netd's HTTP proxy (every port-80 connection is redirected there), which
	// refuses a Host the project did not allow on port 80.
	if p := got["ip-http"]; p.OK || !strings.Contains(p.Reply, "403") {
		t.Errorf("ip-http: %+v, want netd's 403", p)
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test was reached: %v", ev)
	}
	if len(h.Traffic(allowed.Container)) == 0 {
		t.Errorf("allowed.test saw nothing, want the allowed requests")
	}
	// The unlisted name is in abox logs --dns, with its count, and in the review queue.
	dnsLog := h.Abox("logs", "--dns", "--json")
	if !dnsLog.OK() || strings.Count(dnsLog.Stdout, `"name": "other.test"`) < 3 {
		t.Errorf("abox logs --dns: want other.test denied at least 3 times:\n%s", dnsLog)
	}
	if text := h.Abox("logs", "--dns"); !regexp.MustCompile(`(?m)^  run \S+: .*other\.test \(x[3-9]`).MatchString(text.Stdout) {
		t.Errorf("abox logs --dns: want other.test's count (x3 or more) in the denied names:\n%s", text)
	}
	queue := h.Abox("egress", "list", "--json")
	var rep struct {
		Queue []struct {
			Name  string `json:"name"`
			Count int    `json:"count"`
		} `json:"queue"`
	}
	json.Unmarshal([]byte(queue.Stdout), &rep)
	found := false
	for _, q := range rep.Queue {
		found = found || (q.Name == "other.test" && q.Count >= 3)
	}
	if !found {
		t.Errorf("egress list queue = %+v, want other.test with its count", rep.Queue)
	}
}

func TestAgentHasNoPrivilege(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	other := h.StartServer("other.test")
	upProject(t, h, "priv", nil, "")
	res := h.Abox("run", `grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; find / -xdev -perm -4000 -type f 2>/dev/null | wc -l; command -v sudo || echo no-sudo`)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	out := agentOutput(res.Stdout)
	for _, want := range []string{"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "\n0\n", "no-sudo"} {
		if !strings.Contains(out, want) {
			t.Errorf("agent status lacks %q:\n%s", want, out)
		}
	}
	// Root in the agent's network namespace (the test forces uid 0 in a container joined the same
	// way as the agent) can neither change the ruleset nor reach a non-allowed host.
	cmd, wait := startRun(t, h, "sleep 60")
	defer cmd.Process.Kill()
	netd := waitRunning(t, h, "netd")
	netdImage := h.MustDocker("inspect", "--format", "{{.Config.Image}}", netd)
	root := h.Docker("run", "--rm", "--network", "container:"+netd, "--user", "0", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--entrypoint", "/bin/sh", netdImage, "-c",
		"nft flush ruleset; echo flush=$?; nft add table inet evil; echo add=$?")
	if !strings.Contains(root.Stdout, "flush=1") || !strings.Contains(root.Stdout, "add=1") {
		t.Errorf("root without capabilities changed the ruleset:\n%s", root)
	}
	agentImage := h.MustDocker("inspect", "--format", "{{.Config.Image}}", waitRunning(t, h, "agent"))
	reach := h.Docker("run", "--rm", "--network", "container:"+netd, "--user", "0", "--cap-drop", "ALL",
		"--entrypoint", "/usr/local/bin/claude", agentImage, "net", "tcp", other.IP+":2222", "hi")
	if reach.ExitCode == 0 {
		t.Errorf("root reached other.test:2222: %s", reach)
	}
	// Root's DNS to another resolver is neither redirected to netd (Docker's own forwarding is
	// root's too) nor let out: it is refused.
	dns := h.Docker("run", "--rm", "--network", "container:"+netd, "--user", "0", "--cap-drop", "ALL",
		"--entrypoint", "/usr/local/bin/claude", agentImage, "net", "dns", other.IP+":53", "exfil.root.test")
	if dns.ExitCode == 0 || len(h.Events(other.Container, "dns")) != 0 {
		t.Errorf("root's DNS reached another resolver: %s", dns)
	}
	cmd.Process.Signal(syscall.SIGINT)
	wait()
}

func TestNetdKilledMidRun(t *testing.T) {
	h := harness.Setup(t)
	allowed := h.StartServer("allowed.test")
	upProject(t, h, "kill", []string{"allowed.test"}, "")
	cmd, wait := startRun(t, h, `for i in $(seq 120); do claude net tls allowed.test:443 allowed.test; sleep 0.5; done`)
	defer cmd.Process.Kill()
	netd := waitRunning(t, h, "netd")
	agent := waitRunning(t, h, "agent")
	waitTraffic(t, h, allowed.Container)
	// abox is held still while netd dies, so the agent outlives netd long enough to be probed:
	// with netd gone, the agent has no network, by name or by address.
	if p := h.Docker("exec", agent, "claude", "net", "tls", allowed.IP+":443", "allowed.test"); !p.OK() {
		t.Fatalf("the probe failed while netd ran, so its failure later would prove nothing:\n%s", p)
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	h.MustDocker("kill", netd)
	probes := []harness.Result{
		h.Docker("exec", agent, "claude", "net", "tls", "allowed.test:443", "allowed.test"),
		h.Docker("exec", agent, "claude", "net", "tls", allowed.IP+":443", "allowed.test"),
		h.Docker("exec", agent, "claude", "net", "tcp", allowed.IP+":2222"),
	}
	cmd.Process.Signal(syscall.SIGCONT)
	for _, p := range probes {
		t.Logf("after netd died: %s", strings.TrimSpace(p.Stdout))
		if p.ExitCode != 1 || !strings.Contains(p.Stdout, `"ok":false`) {
			t.Errorf("a probe from the agent after netd died: want the probe's own failure (exit 1, ok false):\n%s", p)
		}
	}
	res := wait()
	if res.ExitCode == 0 {
		t.Errorf("abox run after netd died exited 0, want the agent's failure:\n%s", res)
	}
	runs := runRecords(t, h)
	if len(runs) != 1 || runs[0]["outcome"] != "netd-died" {
		t.Errorf("run record = %v, want outcome netd-died", runs)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}

func TestInterruptTearsDown(t *testing.T) {
	h := harness.Setup(t)
	upProject(t, h, "sigint", nil, "")
	cmd, wait := startRun(t, h, "getent hosts interrupted.invalid; sleep 120")
	defer cmd.Process.Kill()
	waitRunning(t, h, "agent")
	time.Sleep(time.Second)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	res := wait()
	if time.Since(start) > 60*time.Second {
		t.Errorf("teardown after SIGINT took %s", time.Since(start))
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left after SIGINT: %v\n%s", left, res)
	}
	runs := runRecords(t, h)
	if len(runs) != 1 || runs[0]["outcome"] != "interrupted" {
		t.Fatalf("run record = %v, want outcome interrupted", runs)
	}
	dns, err := os.ReadFile(filepath.Join(runs[0]["run_dir"].(string), "netd", "dns.jsonl"))
	if err != nil || !strings.Contains(string(dns), "interrupted.invalid") {
		t.Errorf("harvested dns.jsonl = %q, %v; want the query made before the interrupt", dns, err)
	}
}

func TestTwoProjectsAreApart(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("a.test", "b.test")
	upProject(t, h, "alpha", []string{"a.test"}, "")
	// A second project on the same network and profile, in its own workspace.
	ws2 := filepath.Join(h.Dir, "work2")
	os.MkdirAll(ws2, 0o755)
	os.Chown(ws2, 1000, 1000) // the agent runs as the workspace owner, never root
	os.WriteFile(filepath.Join(ws2, "agentbox.yaml"), []byte("version: 1\nproject: beta\nprofile: "+h.Profile+"\negress: [b.test]\n"), 0o644)
	if res := h.AboxIn(ws2, "up", "--yes"); !res.OK() {
		t.Fatalf("abox up (beta): %s", res)
	}
	type out struct{ res harness.Result }
	done := make(chan out, 2)
	script := func(mine, theirs string) string {
		return strings.Join([]string{
			"sleep 2",
			`echo "mine $(claude net tls ` + mine + `:443 ` + mine + `)"`,
			`echo "theirs $(claude net dns 127.0.0.1:53 ` + theirs + `)"`,
			`for ip in $(getent ahostsv4 ` + mine + ` | awk '{print $1}' | sort -u); do :; done`,
			`ps -e -o comm= | sort -u | tr '\n' ' '; echo`,
		}, "\n")
	}
	go func() { done <- out{h.Abox("run", script("a.test", "b.test"))} }()
	go func() { done <- out{h.AboxIn(ws2, "run", script("b.test", "a.test"))} }()
	for i := 0; i < 2; i++ {
		r := (<-done).res
		if !r.OK() {
			t.Fatalf("concurrent run: %s", r)
		}
		p := probes(t, agentOutput(r.Stdout))
		if !p["mine"].OK || p["theirs"].OK {
			t.Errorf("project saw %+v: want its own host allowed and the other project's refused", p)
		}
		if strings.Contains(agentOutput(r.Stdout), "abox") {
			t.Errorf("the agent saw another container's processes: %s", agentOutput(r.Stdout))
		}
	}
	// Each project's DNS log holds its own names only: the other's name appears only as denied.
	checkDNS := func(dir, mine, theirs string) {
		res := h.AboxIn(dir, "logs", "--dns", "--json")
		var lines []struct{ Name, Verdict string }
		if err := json.Unmarshal([]byte(res.Stdout), &lines); err != nil {
			t.Fatalf("abox logs --dns --json: %v\n%s", err, res)
		}
		sawMine := false
		for _, l := range lines {
			sawMine = sawMine || (l.Name == mine && l.Verdict == "allowed")
			if l.Name == theirs && l.Verdict == "allowed" {
				t.Errorf("%s resolved the other project's %s", dir, theirs)
			}
		}
		if !sawMine {
			t.Errorf("%s's DNS log lacks its own %s: %+v", dir, mine, lines)
		}
	}
	checkDNS(h.Workspace, "a.test", "b.test")
	checkDNS(ws2, "b.test", "a.test")
	if n := len(h.Traffic(srv.Container)); n < 2 {
		t.Errorf("the shared server saw %d events, want both projects' requests", n)
	}
}

// startRun starts `abox run PROMPT` in the background and returns the command and a func that
// waits for it and returns its result.
func startRun(t *testing.T, h *harness.H, prompt string) (*exec.Cmd, func() harness.Result) {
	t.Helper()
	cmd := exec.Command(harness.AboxBinary(t), "run", prompt)
	cmd.Dir, cmd.Env = h.Workspace, h.Env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, func() harness.Result {
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		h.WaitAfterRun() // as [harness.H.AboxIn] does
		return harness.Result{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: code}
	}
}

// waitRunning waits until the project's container of role runs and returns its name.
func waitRunning(t *testing.T, h *harness.H, role string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res := h.Docker("ps", "--filter", "label=abox.hash="+h.ProjectHash(), "--filter", "label=abox.role="+role,
			"--filter", "status=running", "--format", "{{.Names}}")
		if name := strings.TrimSpace(res.Stdout); name != "" {
			return strings.Fields(name)[0]
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no running %s container of the project", role)
	return ""
}

// waitTraffic waits until a test server has seen something.
func waitTraffic(t *testing.T, h *harness.H, container string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if len(h.Traffic(container)) > 0 {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("%s saw no traffic", container)
}
