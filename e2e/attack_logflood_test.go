//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// TestAttackLogFlood is issue 15's flood: the agent fills netd's DNS log with distinct long
// AAAA lookups under an allowed wildcard (each one a decision of its own, so no aggregation
// bounds it), then makes the one lookup it wants nobody to see. With a 1 MiB cap the flood takes
// seconds. The denied name must still reach the review queue, and the run's summary,
// `abox logs` (text and --json) and doctor must say that the log reached its cap, with counts.
func TestAttackLogFlood(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	cfg := h.DefaultConfig()
	cfg.Extra["limits"] = map[string]any{"netd_logs": "1m"}
	h.WriteConfig(cfg)
	h.WriteManifest("version: 1\nproject: logflood\nprofile: " + h.Profile + "\negress:\n  - \"*.flood.test\"\n")
	mustAbox(t, h, "up", "--yes")
	label := strings.Repeat("x", 60)
	res := h.Abox("run", bashLines(
		`echo "flood $(claude net dnsflood 127.0.0.1:53 %d.`+label+`.`+label+`.`+label+`.flood.test 8000 AAAA 4)"`,
		`echo "hidden $(claude net dns 127.0.0.1:53 hidden.exfil.test)"`,
		`true`,
	))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	if p := got["flood"]; !p.OK {
		t.Fatalf("the flood did not run: %+v", p)
	}
	logged := harvestedBytes(t, h, policy.DNSLog)
	if len(logged) > 1<<20 || !strings.Contains(logged, `"truncated":true`) {
		t.Fatalf("dns.jsonl is %d bytes, want it filled to its 1 MiB cap and marked truncated", len(logged))
	}

	// The denied name is in the summary and in the review queue.
	if !strings.Contains(res.Stderr, "denied DNS names: hidden.exfil.test (x1)") {
		t.Errorf("the run summary lacks the denied lookup after the flood:\n%s", res.Stderr)
	}
	if it, ok := reviewQueue(t, h)["dns hidden.exfil.test"]; !ok || it.Count != 1 {
		t.Errorf("review queue: hidden.exfil.test = %+v (%v), want it once", it, ok)
	}
	// The cap is reported, with counts, in the summary, `abox logs`, its --json and doctor.
	notice := "log cap: dns.jsonl: reached its 1 MiB cap; "
	if !strings.Contains(res.Stderr, notice) || !strings.Contains(res.Stderr, "every denied name is in the review queue") {
		t.Errorf("the run summary lacks the truncation notice %q:\n%s", notice, res.Stderr)
	}
	if out := mustAbox(t, h, "logs").Stdout; !strings.Contains(out, notice) || !strings.Contains(out, "decision(s) not logged") {
		t.Errorf("abox logs lacks the truncation notice:\n%s", out)
	}
	checkLogCapsJSON(t, h)
	checkDoctorLogCaps(t, h)
}

// harvestedBytes returns a file netd wrote in the last run, as harvested.
func harvestedBytes(t *testing.T, h *harness.H, name string) string {
	t.Helper()
	runs := runRecords(t, h)
	data, err := os.ReadFile(filepath.Join(runs[len(runs)-1]["run_dir"].(string), "netd", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// checkLogCapsJSON expects `abox logs --json` to give the last run's capped DNS log with the
// decisions it dropped, none of them a denial.
func checkLogCapsJSON(t *testing.T, h *harness.H) {
	t.Helper()
	var runs []struct {
		LogCaps []struct {
			Log           string `json:"log"`
			Limit         int64  `json:"limit"`
			Dropped       int64  `json:"dropped"`
			DroppedDenied int64  `json:"dropped_denied"`
			Lost          int64  `json:"denied_lost"`
			Counts        string `json:"counts"`
		} `json:"log_caps"`
	}
	out := mustAbox(t, h, "logs", "--json").Stdout
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) == 0 {
		t.Fatalf("abox logs --json: %v\n%s", err, out)
	}
	caps := runs[0].LogCaps
	if len(caps) != 1 || caps[0].Log != policy.DNSLog || caps[0].Limit != 1<<20 || caps[0].Dropped < 1000 ||
		caps[0].DroppedDenied != 0 || caps[0].Lost != 0 || caps[0].Counts != "final" {
		t.Errorf("abox logs --json: log_caps = %+v, want dns.jsonl's final counts with over 1000 dropped, no denial", caps)
	}
}

// checkDoctorLogCaps expects doctor to warn about the capped log, with its counts.
func checkDoctorLogCaps(t *testing.T, h *harness.H) {
	t.Helper()
	res := h.Abox("doctor", "--json")
	var rep struct {
		Checks []struct {
			ID, Status, Detail string
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res)
	}
	for _, c := range rep.Checks {
		if c.ID == "egress.log-caps" {
			if c.Status != "warn" || !strings.Contains(c.Detail, "dns.jsonl: reached its 1 MiB cap") || !strings.Contains(c.Detail, "decision(s) not logged") {
				t.Errorf("doctor egress.log-caps: %s %q, want a warning with the counts", c.Status, c.Detail)
			}
			return
		}
	}
	t.Errorf("doctor --json has no egress.log-caps:\n%s", res.Stdout)
}
