//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// TestLongRunTearsDown: a run longer than any fixed teardown budget (real Claude Code runs last
// minutes) still ends with a full teardown: netd's counters and logs harvested, its denials in
// the review queue and the run record, and no container left. Once the teardown's deadline was
// made when the run started: after 90 s every step failed, netd was left running and the audit
// trail was lost.
func TestLongRunTearsDown(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("srv.test")
	upProject(t, h, "longrun", nil, "")
	res := h.Abox("run", bashLines(
		`claude net dns 127.0.0.1:53 early.test`,
		`claude net tls `+srv.IP+`:443 early-refused.test`,
		`sleep 125`,
		`claude net dns 127.0.0.1:53 late.test`,
		`true`,
	))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	for _, want := range []string{"early.test (x1)", "late.test (x1)", "early-refused.test (x1)"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("the run summary lacks %q:\n%s", want, res.Stderr)
		}
	}
	if strings.Contains(res.Stderr, "deadline exceeded") {
		t.Errorf("a teardown step ran out of time:\n%s", res.Stderr)
	}
	runs := runRecords(t, h)
	if len(runs) != 1 {
		t.Fatalf("runs.jsonl has %d records, want 1", len(runs))
	}
	r := runs[0]
	if d, _ := r["duration_s"].(float64); d < 120 {
		t.Errorf("the run lasted %v s, want at least 120", r["duration_s"])
	}
	if r["denied_domains"] != float64(2) || r["refused_connections"] != float64(1) {
		t.Errorf("run record denied %v, refused %v; want 2 and 1: %v", r["denied_domains"], r["refused_connections"], r)
	}
	if dropped, _ := r["dropped_packets"].(float64); dropped < 0 {
		t.Errorf("run record dropped_packets %v: netd's counters were not harvested", r["dropped_packets"])
	}
	q := reviewQueue(t, h)
	for _, k := range []string{"dns early.test", "dns late.test", "conn early-refused.test"} {
		if q[k].Count != 1 {
			t.Errorf("review queue %s = %+v, want it queued once", k, q[k])
		}
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left after the run: %v", left)
	}
}
