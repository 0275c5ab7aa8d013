//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/telemetry"
)

// Execution and privilege: the agent tries to become root, to get a root process to run its
// code, to reach netd's processes, and to exhaust the resources of the machine.

// TestAttackNoRootAfterStart: the original's refresh loop and root `docker exec`s ran commands by
// bare name on a PATH the agent controls (W1). Here the agent plants look-alikes of every
// command such a process would run, in its PATH and in the workspace, and leaves processes
// behind: no process in its container runs as root, abox never execs into the agent container,
// nothing planted ever runs as root, and no process outlives the run.
func TestAttackNoRootAfterStart(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "noroot", nil, "")
	shim := newDockerShim(t, "", 0)
	plant := `printf '#!/bin/sh\n[ "$(id -u)" = 0 ] && touch /workspace/PLANTED-RAN-AS-ROOT-%s\nexec /usr/bin/env -i %s "$@"\n' $c $c`
	script := strings.Join([]string{
		`mkdir -p ~/.local/bin bin`,
		`for c in getent nft iptables ipset cat sh bash ls awk grep sort docker sleep true id kill ps; do`,
		`  ` + plant + ` > ~/.local/bin/$c; chmod +x ~/.local/bin/$c; cp ~/.local/bin/$c bin/$c`,
		`done`,
		`echo "uids $(awk '/^(Uid|Gid):/ {print $2, $3, $4, $5}' /proc/[0-9]*/status | tr ' ' '\n' | sort -u | tr '\n' ' ')"`,
		`ps -eo uid=,comm= | awk '{print "proc", $1, $2}'`,
		`nohup sleep 300 >/dev/null 2>&1 &`,
		`setsid sleep 301 >/dev/null 2>&1 </dev/null &`,
		`(trap '' TERM HUP; exec sleep 302) >/dev/null 2>&1 &`,
		`echo planted`,
	}, "\n")
	_, wait := startAbox(t, h, h.Workspace, shim.env(h), "run", script)
	start := time.Now()
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("the run took %s: processes left behind held it", d)
	}
	out := agentOutput(res.Stdout)
	if !strings.Contains(out, "uids 1000 \n") {
		t.Errorf("some process in the agent container has another uid or gid than 1000:\n%s", out)
	}
	procs := 0
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "proc" {
			procs++
			if f[1] != "1000" {
				t.Errorf("process %s runs as uid %s in the agent container", f[2], f[1])
			}
		}
	}
	if procs < 3 {
		t.Errorf("saw %d processes, want the init, the stand-in and the shell at least:\n%s", procs, out)
	}
	agent := runRecords(t, h)[0]["container"].(string)
	for _, c := range shim.calls() {
		if strings.HasPrefix(c, "exec ") && strings.Contains(c, agent) {
			t.Errorf("abox ran a command in the agent container: docker %s", c)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(h.Workspace, "PLANTED-RAN-AS-ROOT-*")); len(left) > 0 {
		t.Errorf("a planted command ran as root: %v", left)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}

// TestAttackSetuidEscalation: a setuid-root binary in the workspace (put there from outside, as
// the agent cannot chown to root) gives the agent no root with no-new-privileges, nor do su,
// mount, a user namespace or a setuid bit of its own. The control runs the same binary as uid
// 1000 in a container without no-new-privileges and gets euid 0.
func TestAttackSetuidEscalation(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "setuid", nil, "")
	for name, src := range map[string]string{"suid-id": "/usr/bin/id", "suid-cat": "/usr/bin/cat", "suid-bash": "/bin/bash"} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(h.Workspace, name)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o4755|os.ModeSetuid); err != nil {
			t.Fatal(err)
		}
	}
	// Under gVisor a user namespace is the Sentry's own, not the host kernel's, and unshare
	// succeeds; what it must not give is privilege: neither a privileged port nor root's files.
	gvisor := agentRuntime(t) == "runsc"
	userns := []string{"userns", "userns-net"}
	if gvisor {
		userns = []string{"userns-bind-53", "userns-shadow"}
	}
	_, got := attackRun(t, h, shellProbe,
		`try userns-bind-53 unshare -Ur perl -MIO::Socket::INET -e 'IO::Socket::INET->new(LocalAddr => "127.0.0.1:53", Proto => "udp") or die "$!\n"'`,
		`try userns-shadow unshare -Ur cat /etc/shadow`,
		`e=$(./suid-id -u); echo "suid-euid {\"ok\":$([ "$e" = 0 ] && echo true || echo false),\"reply\":\"$e\"}"`,
		`try suid-shadow ./suid-cat /etc/shadow`,
		`try suid-bash-p ./suid-bash -p -c '[ "$(id -u)" = 0 ]'`,
		`cp /usr/bin/id own-id && chmod u+s own-id; e=$(./own-id -u); echo "own-setuid {\"ok\":$([ "$e" = 0 ] && echo true || echo false)}"`,
		`try su su -c true root </dev/null`,
		`try mount mount -t tmpfs none /tmp`,
		`try userns unshare -Ur true`,
		`try userns-net unshare -rn true`,
		`try chroot chroot / true`,
		// prctl(PR_GET_NO_NEW_PRIVS): gVisor's /proc/self/status has no NoNewPrivs line.
		`perl -e 'exit(syscall(157, 39, 0, 0, 0, 0) == 1 ? 0 : 1)' && echo 'nnp-unset {"ok":false}' || echo 'nnp-unset {"ok":true}'`,
	)
	probesRefused(t, got, append([]string{"suid-euid", "suid-shadow", "suid-bash-p", "own-setuid", "su", "mount", "chroot", "nnp-unset"}, userns...)...)
	if r := got["suid-euid"].Reply; r != "1000" {
		t.Errorf("the setuid-root id printed %q in the sandbox, want 1000", r)
	}
	control := h.Run(harness.RunOptions{User: "1000:1000", Mounts: []string{h.Workspace + ":/w"}, Cmd: []string{"/w/suid-id", "-u"}})
	if strings.TrimSpace(control.Stdout) != "0" {
		t.Errorf("control: the setuid-root id outside the sandbox printed %s, want euid 0", control)
	}
}

// TestAttackSignalNetd: netd runs in its own PID namespace. The agent does not see its
// processes, cannot signal or ptrace its host pid, and `kill -9 -1` ends only the agent's own
// processes: the run ends with the agent, netd shuts down cleanly afterwards and its logs and
// counters are harvested.
func TestAttackSignalNetd(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "signal", nil, "")
	ptrace := `perl -e 'my $r = syscall(101, 16, $ARGV[0], 0, 0); exit($r == 0 ? 0 : 1)' "$pid"`
	script := strings.Join([]string{
		shellProbe,
		`until [ -s netd.pid ]; do sleep 0.1; done; pid=$(cat netd.pid)`,
		`{`,
		`ps -eo comm= | grep -qx abox && echo 'netd-visible {"ok":true}' || echo 'netd-visible {"ok":false}'`,
		`[ -e /proc/$pid ] && echo 'netd-proc {"ok":true}' || echo 'netd-proc {"ok":false}'`,
		`try kill-netd kill -9 "$pid"`,
		`try ptrace-netd ` + ptrace,
		`claude net dns 127.0.0.1:53 before-kill.test >/dev/null`,
		`} > signal.log 2>&1`,
		`kill -9 -1`,
		`sleep 30`,
	}, "\n")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", script)
	netd := waitRunning(t, h, "netd")
	pid := h.MustDocker("inspect", "--format", "{{.State.Pid}}", netd)
	workspaceFile(t, h.Workspace, "netd.pid", pid+"\n")
	res := wait()
	if res.OK() {
		t.Errorf("abox run exited 0 after kill -9 -1, want the agent's death:\n%s", res)
	}
	got := probes(t, readWorkspace(h.Workspace, "signal.log"))
	probesRefused(t, got, "netd-visible", "netd-proc", "kill-netd", "ptrace-netd")
	if p, _ := strconv.Atoi(pid); p == 1 {
		t.Fatalf("netd's host pid is 1?")
	}
	run := runRecords(t, h)[0]
	if run["outcome"] != "exited" {
		t.Errorf("run outcome %v, want exited (not netd-died): %v", run["outcome"], run)
	}
	h2, err := telemetry.ReadHarvest(filepath.Join(run["run_dir"].(string), "netd"))
	if err != nil || h2.Counters == nil {
		t.Errorf("netd's harvest: %v, counters %v; want netd to have shut down cleanly", err, h2)
	} else if !strings.Contains(fmt.Sprint(namesOf(h2.DNS)), "before-kill.test") {
		t.Errorf("harvested dns.jsonl lacks the query made before the kill: %v", namesOf(h2.DNS))
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}

func namesOf(recs []policy.DNSRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Name)
	}
	return out
}

// TestAttackForkBomb: a fork bomb meets the pids limit of the agent's cgroup, the host can still
// fork, and the run's timeout tears the sandbox down.
func TestAttackForkBomb(t *testing.T) {
	h := harness.Setup(t)
	const limit = 200
	cfg := h.DefaultConfig()
	cfg.Extra["limits"] = map[string]any{"pids": limit, "memory": "2g"}
	h.WriteConfig(cfg)
	h.WriteManifest("version: 1\nproject: forkbomb\nprofile: " + h.Profile + "\n")
	mustAbox(t, h, "up", "--yes")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", "--timeout", "25s", `bomb() { bomb | bomb & }; bomb; exec sleep 600`)
	var cg string
	pollUntil(time.Minute, func() bool {
		id := strings.TrimSpace(h.Docker("ps", "-aq", "--no-trunc", "--filter", "label=abox.hash="+h.ProjectHash(),
			"--filter", "label=abox.role=agent").Stdout)
		cg = "/sys/fs/cgroup/pids/docker/" + id
		return id != "" && fileText(cg+"/pids.max") != ""
	})
	peak := 0
	pollUntil(20*time.Second, func() bool {
		n, _ := strconv.Atoi(strings.TrimSpace(fileText(cg + "/pids.current")))
		peak = max(peak, n)
		return peak >= limit
	})
	if max := strings.TrimSpace(fileText(cg + "/pids.max")); max != strconv.Itoa(limit) {
		t.Errorf("the agent's pids.max is %q, want %d", max, limit)
	}
	if peak < limit*9/10 || peak > limit {
		t.Errorf("the bomb peaked at %d processes, want it to reach the limit of %d and stop there", peak, limit)
	}
	var ws syscall.WaitStatus
	if pid, err := syscall.ForkExec("/bin/true", []string{"true"}, nil); err != nil {
		t.Errorf("the host cannot fork during the bomb: %v", err)
	} else {
		syscall.Wait4(pid, &ws, 0, nil)
	}
	start := time.Now()
	res := wait()
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("the run took %s to end after the bomb", d)
	}
	if run := runRecords(t, h)[0]; run["outcome"] != "timeout" {
		t.Errorf("run outcome %v, want timeout\n%s", run["outcome"], res)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}

func fileText(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// TestAttackDiskFill: the agent's root filesystem is read-only (and /run is root's); its scratch
// space is bounded tmpfs: every place it can write outside the workspace and ~/.claude fills up
// with ENOSPC, the host's free space does not move while 2 GiB sit in the largest one, and
// teardown works.
func TestAttackDiskFill(t *testing.T) {
	h := harness.Setup(t)
	upProject(t, h, "diskfill", nil, "")
	fill := func(name, dir string) string {
		return `r=$(dd if=/dev/zero of=` + dir + `/fill bs=1M status=none 2>&1); mb=$(( $(stat -c %s ` + dir + `/fill) >> 20 ))` +
			`; echo "fill-` + name + ` {\"ok\":false,\"error\":\"$r\",\"reply\":\"$mb\"}"`
	}
	script := []string{shellProbe}
	for _, d := range []string{"/", "/usr/local/bin", "/etc", "/opt", "/var", "/home/agent", "/run"} {
		script = append(script, `try rootfs-`+strings.ReplaceAll(strings.Trim(d, "/"), "/", "-")+` dd if=/dev/zero of=`+d+`/fill bs=1M count=1`)
	}
	for name, dir := range map[string]string{"tmp": "/tmp", "var-tmp": "/var/tmp", "config": "/home/agent/.config", "local": "/home/agent/.local"} {
		script = append(script, fill(name, dir), "rm -f "+dir+"/fill")
	}
	script = append(script, fill("cache", "/home/agent/.cache"), "touch filled; until [ -e measured ]; do sleep 0.2; done; rm -f /home/agent/.cache/fill")
	before := freeBytes(t, h.StateHome)
	_, wait := startAbox(t, h, h.Workspace, nil, "run", strings.Join(script, "\n"))
	waitWorkspaceFile(t, h.Workspace, "filled")
	during := freeBytes(t, h.StateHome)
	workspaceFile(t, h.Workspace, "measured", "")
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	refusedWithPrefix(t, got, "rootfs")
	for name, want := range map[string]int{"tmp": 1024, "var-tmp": 256, "config": 64, "local": 512, "cache": 2048} {
		p := got["fill-"+name]
		mb, _ := strconv.Atoi(p.Reply)
		if !strings.Contains(p.Error, "No space left on device") || mb > want || mb < want-16 {
			t.Errorf("fill %s: %+v, want ENOSPC after about %d MiB", name, p, want)
		}
	}
	if drop := before - during; drop > 1<<30 {
		t.Errorf("the host's free space fell by %d MiB while the agent held 2 GiB", drop>>20)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	if runs := runRecords(t, h); len(runs) != 1 || runs[0]["outcome"] != "exited" {
		t.Errorf("runs = %v, want the one run recorded", runs)
	}
}

func freeBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}
