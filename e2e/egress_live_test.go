//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
)

// reloadBudget is how soon `abox egress add/rm` must take effect in a running sandbox.
const reloadBudget = 2 * time.Second

// TestEgressLiveChange proves that `abox egress add` and `rm` reach a running sandbox at once:
// the agent loops probes with timestamps into a workspace file while the test edits the
// allowlist from the host; the run is neither restarted nor rebuilt.
func TestEgressLiveChange(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	late := h.StartServer("late.test")
	upProject(t, h, "live", nil, "")
	cmd, wait := startRun(t, h, bashLines(
		`end=$((SECONDS+240))`,
		`while [ ! -e stop ] && [ $SECONDS -lt $end ]; do`,
		`  t=$(date +%s.%N)`,
		`  { echo "dns $t $(claude net dns 127.0.0.1:53 late.test)"`,
		`    echo "tls $t $(claude net tls late.test:443 late.test)"`,
		`    echo "tcp $t $(claude net tcp late.test:2222 hi)"`,
		`    echo "tcp-ip $t $(claude net tcp `+late.IP+`:2222 hi)"; } >> probes.log`,
		`  sleep 0.05`,
		`done`,
	))
	defer cmd.Process.Kill()
	netd := waitRunning(t, h, "netd")
	waitProbes(t, h, time.Now(), 2, false)

	start := time.Now()
	mustAbox(t, h, "egress", "add", "late.test", "late.test:2222")
	added := time.Now()
	waitProbes(t, h, added, 1, true)
	var through []string
	for _, kind := range []string{"dns", "tls", "tcp", "tcp-ip"} {
		at, ok := firstOK(t, h, start)[kind]
		if d := at.Sub(added); !ok || d > reloadBudget {
			t.Errorf("%s got through %s after egress add returned, want within %s", kind, d.Round(time.Millisecond), reloadBudget)
		}
		through = append(through, fmt.Sprintf("%s %+.3fs", kind, at.Sub(added).Seconds()))
	}
	t.Logf("egress add took %s; first through, from its return: %s", added.Sub(start).Round(time.Millisecond), strings.Join(through, ", "))

	start = time.Now()
	mustAbox(t, h, "egress", "rm", "late.test", "late.test:2222")
	removed := time.Now()
	waitProbes(t, h, removed.Add(reloadBudget), 1, false)
	lastOK := map[string]time.Time{}
	for _, p := range probeLog(t, h) {
		if p.ok {
			lastOK[p.kind] = p.at
		}
		if p.at.After(removed.Add(reloadBudget)) && p.ok {
			t.Errorf("%s at +%s after egress rm returned: still through", p.kind, p.at.Sub(removed).Round(time.Millisecond))
		}
	}
	t.Logf("egress rm took %s; last probes through at %+.3fs (tls), %+.3fs (tcp-ip) from its return",
		removed.Sub(start).Round(time.Millisecond), lastOK["tls"].Sub(removed).Seconds(), lastOK["tcp-ip"].Sub(removed).Seconds())
	if now := waitRunning(t, h, "netd"); now != netd {
		t.Errorf("netd is %s after the changes, want the same %s: the run was restarted", now, netd)
	}
	touchWorkspace(t, h, "stop")
	if res := wait(); !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	if runs := runRecords(t, h); len(runs) != 1 {
		t.Errorf("%d runs recorded, want the one", len(runs))
	}
}

// probeLine is one line of the live test's probes.log.
type probeLine struct {
	kind string
	at   time.Time
	ok   bool
}

func probeLog(t *testing.T, h *harness.H) []probeLine {
	t.Helper()
	f, err := os.Open(filepath.Join(h.Workspace, "probes.log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []probeLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) < 3 {
			continue
		}
		sec, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		var p probeResult
		if json.Unmarshal([]byte(f[2]), &p) != nil {
			continue
		}
		out = append(out, probeLine{kind: f[0], at: time.Unix(0, int64(sec*1e9)), ok: p.OK})
	}
	return out
}

// probesPerRound is how many probes the live test's loop runs per round.
const probesPerRound = 4

// waitProbes waits for n complete rounds of probes started after since with every probe
// through (ok) or every one refused.
func waitProbes(t *testing.T, h *harness.H, since time.Time, n int, ok bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rounds := map[time.Time]int{}
		full := 0
		for _, p := range probeLog(t, h) {
			if !p.at.Before(since) && p.ok == ok {
				if rounds[p.at]++; rounds[p.at] == probesPerRound {
					full++
				}
			}
		}
		if full >= n {
			return
		}
	}
	t.Fatalf("no %d rounds of probes all ok=%v since %s; probes.log:\n%s", n, ok, since.Format(time.StampMilli), tailWorkspace(h, "probes.log"))
}

// firstOK returns when each kind of probe first got through after since.
func firstOK(t *testing.T, h *harness.H, since time.Time) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for _, p := range probeLog(t, h) {
		if p.ok && p.at.After(since) {
			if _, seen := out[p.kind]; !seen {
				out[p.kind] = p.at
			}
		}
	}
	return out
}

// TestEgressRealRegistry fetches a package from the npm registry the host is configured with,
// through netd, once allowed and once not. It is the only e2e test that leaves the machine, and
// only for that one host, whose name comes from `npm config get registry` at test time.
func TestEgressRealRegistry(t *testing.T) {
	t.Parallel()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed on the host: no registry to test against")
	}
	out, err := exec.Command(npm, "config", "get", "registry").Output()
	if err != nil {
		t.Skipf("npm config get registry: %v", err)
	}
	reg, err := url.Parse(strings.TrimSpace(string(out)))
	if err != nil || reg.Scheme != "https" || reg.Hostname() == "" {
		t.Skipf("npm registry %q is not an https URL", strings.TrimSpace(string(out)))
	}
	entry := reg.Hostname()
	if p := reg.Port(); p != "" && p != "443" {
		entry += ":" + p
	}
	base := strings.TrimSuffix(reg.String(), "/")
	h := harness.Setup(t)
	upProject(t, h, "registry", []string{entry}, "")
	fetch := bashLines(
		`echo "dns $(claude net dns 127.0.0.1:53 `+reg.Hostname()+`)"`,
		`meta=$(curl -fsS --max-time 30 -H 'Accept: application/vnd.npm.install-v1+json' '`+base+`/is-number' 2>/tmp/err); rc=$?`,
		`tgz=$(printf '%s' "$meta" | jq -r '.versions["7.0.0"].dist.tarball // empty' 2>/dev/null)`,
		`if [ -n "$tgz" ] && curl -fsS --max-time 30 -o /tmp/p.tgz "$tgz" 2>>/tmp/err && tar -tzf /tmp/p.tgz | grep -q package.json; then ok=true; else ok=false; fi`,
		`echo "fetch {\"ok\":$ok,\"reply\":\"curl exit $rc\",\"error\":$(jq -Rs . </tmp/err)}"`,
	)
	res := mustAbox(t, h, "run", fetch)
	got := probes(t, agentOutput(res.Stdout))
	probesOK(t, got, "dns", "fetch")

	mustAbox(t, h, "egress", "rm", entry)
	res = mustAbox(t, h, "run", fetch)
	got = probes(t, agentOutput(res.Stdout))
	probesRCode(t, got, "NXDOMAIN", "dns")
	if p := got["fetch"]; p.OK || p.Reply != "curl exit 6" {
		t.Errorf("fetch with the registry not allowed: %+v, want curl's exit 6 (could not resolve)", p)
	}
}

// agentSet lists netd's agent_dst set, the (address . port) pairs any uid may reach.
func agentSet(t *testing.T, h *harness.H, netd string) string {
	t.Helper()
	return h.MustDocker("exec", netd, "nft", "list", "set", "inet", "abox", "agent_dst")
}

// touch creates a file in the workspace, as the agent's uid so the agent could remove it.
func touchWorkspace(t *testing.T, h *harness.H, name string) {
	t.Helper()
	p := filepath.Join(h.Workspace, name)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(p, 1000, 1000)
}

// waitFile waits for the agent to create a file in the workspace.
func waitFile(t *testing.T, h *harness.H, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(h.Workspace, name)); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the agent never created %s", name)
}

func tailWorkspace(h *harness.H, name string) string {
	data, _ := os.ReadFile(filepath.Join(h.Workspace, name))
	s := string(data)
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}
