//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/telemetry"
)

// upSpare is a project whose config.yaml sets defaults.spare_netd, as abox does by default.
func upSpare(t *testing.T, project string) *harness.H {
	t.Helper()
	h := harness.Setup(t)
	h.WriteConfig(harness.SpareNetd(h.DefaultConfig()))
	h.WriteManifest("version: 1\nproject: " + project + "\nprofile: " + h.Profile + "\n")
	mustAbox(t, h, "up", "--yes")
	return h
}

// spareRecord is what a test reads of spare-netd.json.
type spareRecord struct {
	ID   string `json:"run_id"`
	Netd string `json:"netd"`
}

// waitSpare waits for the project's spare netd to be recorded and returns its record.
func waitSpare(t *testing.T, h *harness.H) spareRecord {
	t.Helper()
	file := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "spare-netd.json")
	deadline := time.Now().Add(90 * time.Second)
	for {
		b, err := os.ReadFile(file)
		var rec spareRecord
		if err == nil && json.Unmarshal(b, &rec) == nil && rec.Netd != "" {
			return rec
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(h.StateHome, "projects", h.ProjectHash(), "spare-netd.log"))
			t.Fatalf("no spare netd was recorded within 90 s of the run (%v); spare-netd.log:\n%s", err, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSpareNetdServesOneRun: with defaults.spare_netd, a run leaves a spare netd behind, the next
// run uses it (its netd is the spare, its record says when the spare started) and leaves a new
// one, never the same container twice. The DNS log of the run on the spare holds its own query
// and not the previous run's.
func TestSpareNetdServesOneRun(t *testing.T) {
	t.Parallel()
	h := upSpare(t, "spare")
	res := h.Abox("run", `getent hosts marker-one.invalid; echo one`)
	if !res.OK() {
		t.Fatalf("first run: %s", res)
	}
	first := lastRunRecord(t, h)
	spare := waitSpare(t, h)
	if spare.ID == first.ID {
		t.Fatalf("the spare has the first run's id %s", spare.ID)
	}
	res = h.Abox("run", `getent hosts marker-two.invalid; echo two`)
	if !res.OK() {
		t.Fatalf("second run: %s", res)
	}
	second := lastRunRecord(t, h)
	if second.ID != spare.ID || second.NetdStarted == "" {
		t.Fatalf("the second run (id %s, netd_started %q) did not run on the spare %s (id %s)\n%s", second.ID, second.NetdStarted, spare.Netd, spare.ID, res.Stderr)
	}
	phases, _ := os.ReadFile(filepath.Join(second.RunDir, "phases.json"))
	t.Logf("the second run's phases: %s", phases)
	dns, err := os.ReadFile(filepath.Join(second.RunDir, "netd", "dns.jsonl"))
	if err != nil || !strings.Contains(string(dns), "marker-two.invalid") {
		t.Fatalf("the second run's dns.jsonl = %q, %v; want its own query", dns, err)
	}
	if strings.Contains(string(dns), "marker-one.invalid") {
		t.Errorf("the second run's netd logged the first run's query:\n%s", dns)
	}
	next := waitSpare(t, h)
	if next.ID == spare.ID || next.Netd == spare.Netd {
		t.Errorf("the spare after the second run is the one it used: %+v", next)
	}
	if out := h.MustDocker("ps", "-aq", "--filter", "name=^/"+spare.Netd+"$"); strings.TrimSpace(out) != "" {
		t.Errorf("the used spare %s still exists after its run", spare.Netd)
	}
}

// TestSpareNetdDroppedAfterPolicyEdit: a spare started before `abox egress add` mounts a policy
// the next run would not load; that run does not use it, says so, and removes it.
func TestSpareNetdDroppedAfterPolicyEdit(t *testing.T) {
	t.Parallel()
	h := upSpare(t, "sparedit")
	if res := h.Abox("run", `echo one`); !res.OK() {
		t.Fatalf("first run: %s", res)
	}
	spare := waitSpare(t, h)
	mustAbox(t, h, "egress", "add", "spare-edit.example")
	res := h.Abox("run", `echo two`)
	if !res.OK() {
		t.Fatalf("second run: %s", res)
	}
	second := lastRunRecord(t, h)
	if second.ID == spare.ID || second.NetdStarted != "" {
		t.Errorf("the run after the policy edit ran on the spare started before it: %+v", second)
	}
	if !strings.Contains(strings.Join(second.Notes, "\n"), "the spare netd was not used") {
		t.Errorf("the run's notes do not say the spare was dropped: %q", second.Notes)
	}
	if out := h.MustDocker("ps", "-aq", "--filter", "name=^/"+spare.Netd+"$"); strings.TrimSpace(out) != "" {
		t.Errorf("the dropped spare %s still exists", spare.Netd)
	}
	waitSpare(t, h) // the next one, so that the cleanup finds it
}

// TestAttackSpareNetdUnreachable: an agent of a run that is still going when another run of the
// project leaves its spare netd behind is handed the spare's address on the project network and
// sends it a DNS query, an HTTP request and a TLS hello, each naming a marker, and tries the
// ports netd serves on. Its own netd takes all three (the agent's traffic to ports 53, 80 and
// 443 of any address is its netd's) and logs the markers; the others are closed; and the run that
// then uses the spare finds none of the markers in the spare's logs: what a run's agent sent does
// not reach the netd of the next one.
func TestAttackSpareNetdUnreachable(t *testing.T) {
	t.Parallel()
	h := upSpare(t, "sparehit")
	target := h.WriteFile("spare-target", "")
	os.Remove(target)
	attacker := make(chan harness.Result, 1)
	go func() {
		attacker <- h.Abox("run", `for i in $(seq 1200); do [ -s spare-target ] && break; sleep 0.1; done; ip=$(cat spare-target); `+
			`echo "target [$ip]"; `+
			`timeout 3 bash -c "printf '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x0bmarker-dns1\x07invalid\x00\x00\x01\x00\x01' > /dev/udp/$ip/53"; `+
			`curl -s -m 3 -o /dev/null -H 'Host: marker-http1.invalid' http://$ip/; `+
			`curl -s -m 3 -o /dev/null --resolve marker-tls1.invalid:443:$ip https://marker-tls1.invalid/; `+
			`for port in 8080 15353 15443 15480 15481 15482 15483; do `+
			`if timeout 3 bash -c "exec 3<>/dev/tcp/$ip/$port" 2>/dev/null; then echo "tcp $port open"; else echo "tcp $port closed"; fi; done; `+
			`echo attacked`)
	}()
	// A second run while the first waits: its end leaves the spare.
	time.Sleep(2 * time.Second)
	if res := h.Abox("run", `echo second`); !res.OK() {
		t.Fatalf("second run: %s", res)
	}
	spare := waitSpare(t, h)
	ip := h.IP(spare.Netd)
	if ip == "" {
		t.Fatalf("the spare %s has no address on the project network", spare.Netd)
	}
	h.WriteFile("spare-target", ip)
	res := <-attacker
	out := agentOutput(res.Stdout)
	if !res.OK() || !strings.Contains(out, "attacked") || !strings.Contains(out, "target ["+ip+"]") {
		t.Fatalf("the attacking run did not get to its attack: %s\n%s", res, out)
	}
	if strings.Contains(out, " open") {
		t.Errorf("the agent reached a port of the spare netd %s at %s:\n%s", spare.Netd, ip, out)
	}
	markers := []string{"marker-dns1.invalid", "marker-http1.invalid", "marker-tls1.invalid"}
	var attackRun string
	for _, r := range allRunRecords(t, h) {
		if r.DurationS > 3 { // the attacker waited for its target; the others are instant
			attackRun = r.RunDir
		}
	}
	if own := netdLogs(t, attackRun); !containsAll(own, markers) {
		t.Fatalf("the attacking run's own netd did not log all of %q (the attack proves nothing):\n%s", markers, own)
	}
	if res := h.Abox("run", `echo third`); !res.OK() {
		t.Fatalf("third run: %s", res)
	}
	third := lastRunRecord(t, h)
	if third.ID != spare.ID {
		t.Fatalf("the third run (id %s) did not run on the spare (id %s)", third.ID, spare.ID)
	}
	logs := netdLogs(t, third.RunDir)
	for _, m := range markers {
		if strings.Contains(logs, m) {
			t.Errorf("the spare's logs hold %s, which the earlier run's agent sent:\n%s", m, logs)
		}
	}
	waitSpare(t, h)
}

// allRunRecords returns every run of `abox logs --runs --json`, newest first.
func allRunRecords(t *testing.T, h *harness.H) []telemetry.RunRecord {
	t.Helper()
	res := h.Abox("logs", "--runs", "--json")
	var runs []telemetry.RunRecord
	if err := json.Unmarshal([]byte(res.Stdout), &runs); err != nil {
		t.Fatalf("abox logs --runs --json: %v\n%s", err, res)
	}
	return runs
}

// netdLogs returns every harvested netd log of the run directory, concatenated.
func netdLogs(t *testing.T, runDir string) string {
	t.Helper()
	var all strings.Builder
	files, _ := filepath.Glob(filepath.Join(runDir, "netd", "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all.Write(b)
	}
	return all.String()
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestAttackSpareNetdCountersFromBefore: while a spare waits for its run, anything on the project
// network (an MCP server an earlier run's agent drives, another sandbox's gateway) can send it
// packets, which its ruleset drops and counts. The run that then takes the spare counts only what
// came after its policy verify: its dropped packets hold none of those sent before it.
func TestAttackSpareNetdCountersFromBefore(t *testing.T) {
	t.Parallel()
	h := upSpare(t, "sparectr")
	if res := h.Abox("run", `echo one`); !res.OK() {
		t.Fatalf("first run: %s", res)
	}
	spare := waitSpare(t, h)
	ip := strings.TrimSpace(h.IP(spare.Netd))
	const sent = 25
	r := h.Run(harness.RunOptions{Cmd: []string{"sh", "-c",
		"for i in $(seq " + strconv.Itoa(sent) + "); do curl -s -m 1 -o /dev/null http://" + ip + ":9/; done; echo sent"}})
	if !strings.Contains(r.Stdout, "sent") {
		t.Fatalf("the client did not send: %s", r)
	}
	if res := h.Abox("run", `echo two`); !res.OK() {
		t.Fatalf("second run: %s", res)
	}
	second := lastRunRecord(t, h)
	if second.ID != spare.ID {
		t.Fatalf("the second run (id %s) did not run on the spare (id %s)", second.ID, spare.ID)
	}
	if second.DroppedPackets < 0 || second.DroppedPackets >= sent {
		counters, _ := os.ReadFile(filepath.Join(second.RunDir, "netd", "counters.json"))
		t.Errorf("the run on the spare counts %d dropped packets, the %d+ sent to the spare before it among them:\n%s",
			second.DroppedPackets, sent, counters)
	}
	waitSpare(t, h)
}
