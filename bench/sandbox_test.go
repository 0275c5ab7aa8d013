//go:build bench && e2e

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
)

// The network benches run the stand-in's bench modes (`claude net …bench`, `claude mcp-call
// --repeat`) with `docker exec` in two places, alternately: in the agent container of a running
// sandbox (uid 1000, netd's network namespace and policy: every path goes through netd) and in a
// plain client container on the same network (the floor: the same binary, straight to the
// server). Only the path differs.

// sandbox is a running `abox run` whose agent sleeps while the benches exec into it.
type sandbox struct {
	cmd          *exec.Cmd
	agent, netd  string
	netdID       string
	stdout, errb bytes.Buffer
	done         chan error
}

// startSandbox starts `abox run 'sleep 3600'` in p and waits until its agent runs.
func (w *world) startSandbox(t *testing.T, p *project) *sandbox {
	t.Helper()
	s := &sandbox{done: make(chan error, 1)}
	s.cmd = exec.Command(p.bin, "run", "sleep 3600")
	s.cmd.Dir, s.cmd.Env = p.dir, w.h.Env()
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.errb
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	s.agent = w.waitRunning(t, p, "agent", s)
	s.netd = w.waitRunning(t, p, "netd", s)
	s.netdID = w.h.MustDocker("inspect", "--format", "{{.Id}}", s.netd)
	return s
}

// waitRunning returns the name of p's running container of role.
func (w *world) waitRunning(t *testing.T, p *project, role string, s *sandbox) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		res := w.h.Docker("ps", "--filter", "label=abox.hash="+p.hash, "--filter", "label=abox.role="+role,
			"--filter", "status=running", "--format", "{{.Names}}")
		if f := strings.Fields(res.Stdout); len(f) > 0 {
			return f[0]
		}
		select {
		case err := <-s.done:
			t.Fatalf("abox run ended before its agent ran: %v\n%s", err, s.errb.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("no running %s container of %s", role, p.name)
	return ""
}

// stop interrupts the run, as Ctrl-C does, and waits for its teardown.
func (s *sandbox) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		s.cmd.Process.Kill()
		t.Errorf("abox run did not end after an interrupt:\n%s", s.errb.String())
	}
}

// client returns the world's plain client container (the client image, the stand-in mounted as
// claude, on the test network), starting it on first use.
func (w *world) client(t *testing.T) string {
	t.Helper()
	if w.clientName != "" {
		return w.clientName
	}
	name := "abox-bench-client-" + w.h.ID
	args := []string{"run", "-d", "--init", "--name", name, "--network", w.h.Network,
		"-v", harness.StandinBinary(t) + ":/usr/local/bin/claude:ro"}
	for k, v := range w.h.Labels() {
		args = append(args, "--label", k+"="+v)
	}
	w.h.MustDocker(append(args, harness.ClientImage(t), "sleep", "infinity")...)
	w.clientName = name
	return name
}

// benchResult is what a stand-in bench mode prints (see e2e/standin/net_bench.go).
type benchResult struct {
	OK        bool    `json:"ok"`
	N         int     `json:"n"`
	Errors    int     `json:"errors"`
	Error     string  `json:"error"`
	TotalS    float64 `json:"total_s"`
	PerS      float64 `json:"per_s"`
	Bytes     int64   `json:"bytes"`
	MiBS      float64 `json:"mib_s"`
	LatUS     []int64 `json:"lat_us"`
	ConnectUS int64   `json:"connect_us"`
}

// medianMS is the median latency of the result's operations, in milliseconds.
func (r benchResult) medianMS() float64 {
	v := make([]float64, len(r.LatUS))
	for i, l := range r.LatUS {
		v[i] = float64(l) / 1000
	}
	return Summarize(v).Median
}

// benchIn runs `claude ARGS…` as uid 1000 in container and decodes its report; any failed
// operation fails the test.
func (w *world) benchIn(t *testing.T, container string, args ...string) benchResult {
	t.Helper()
	argv := append([]string{"exec", "-u", "1000", container, "claude"}, args...)
	m := mustOK(t, "claude "+strings.Join(args, " "), w.docker(t, argv...))
	var r benchResult
	lines := strings.Split(strings.TrimSpace(m.Stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || !r.OK {
		t.Fatalf("claude %s: %v %+v\n%s", strings.Join(args, " "), err, r, m.Stderr)
	}
	return r
}

func itoa(n int) string { return strconv.Itoa(n) }

// netdMemory reads the netd container's memory: the cgroup's peak usage (cgroup v1; it counts
// page cache too) and the sum of its processes' VmHWM, in MiB.
func (w *world) netdMemory(t *testing.T, netd string) (cgroupPeak, hwm float64) {
	t.Helper()
	id := w.h.MustDocker("inspect", "--format", "{{.Id}}", netd)
	dir := "/sys/fs/cgroup/memory/docker/" + id
	if b, err := os.ReadFile(dir + "/memory.max_usage_in_bytes"); err == nil {
		n, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		cgroupPeak = n / (1 << 20)
	}
	procs, _ := os.ReadFile(dir + "/cgroup.procs")
	for _, pid := range strings.Fields(string(procs)) {
		n, _ := strconv.Atoi(pid)
		hwm += float64(procStatusKiB(n, "VmHWM")) / 1024
	}
	return cgroupPeak, hwm
}

// containerID returns the id of a container, remembered after the first look.
func (w *world) containerID(t *testing.T, name string) string {
	t.Helper()
	if id, ok := w.ids[name]; ok {
		return id
	}
	id := w.h.MustDocker("inspect", "--format", "{{.Id}}", name)
	if w.ids == nil {
		w.ids = map[string]string{}
	}
	w.ids[name] = id
	return id
}

// cpuSeconds is the CPU time the processes of the container with this id have used (cgroup v1
// cpuacct.usage); 0 when it cannot be read.
func cpuSeconds(id string) float64 {
	b, err := os.ReadFile("/sys/fs/cgroup/cpuacct/docker/" + id + "/cpuacct.usage")
	if err != nil {
		return 0
	}
	ns, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	return ns / 1e9
}

// resetNetdPeak resets the netd cgroup's peak usage, so a later read is the peak since now.
func (w *world) resetNetdPeak(t *testing.T, netd string) {
	t.Helper()
	id := w.h.MustDocker("inspect", "--format", "{{.Id}}", netd)
	if err := os.WriteFile("/sys/fs/cgroup/memory/docker/"+id+"/memory.max_usage_in_bytes", []byte("0"), 0); err != nil {
		t.Logf("cannot reset netd's peak memory (cgroup v1 only): %v", err)
	}
}

// mcpConfig is an MCP configuration naming url, with the bearer token if token is set.
func mcpConfig(url, token string) string {
	server := map[string]any{"type": "http", "url": url}
	if token != "" {
		server["headers"] = map[string]string{"Authorization": "Bearer " + token}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"abox": server}})
	return string(b)
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
