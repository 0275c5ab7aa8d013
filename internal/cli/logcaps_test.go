package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
)

// TestSummaryReportsLogCaps: the run summary names the denial netd kept past the log's cap and
// says which log reached its cap, with counts, and what to do about it; a run within its caps
// says nothing of them.
func TestSummaryReportsLogCaps(t *testing.T) {
	stats := &policy.LogStats{Final: true, Logs: map[string]policy.LogStat{
		policy.DNSLog: {Limit: 1 << 20, Dropped: 5000, DroppedDenied: 1, Denied: []policy.NameCount{{Name: "wanted.test", Count: 1}}},
	}}
	for _, tc := range []struct {
		name    string
		harvest *telemetry.Harvest
		want    []string
	}{
		{"capped", &telemetry.Harvest{Stats: stats, Truncated: map[string]policy.Truncation{policy.DNSLog: {Truncated: true, Limit: 1 << 20}}}, []string{
			"  denied DNS names: wanted.test (x1)\n",
			"  log cap: dns.jsonl: reached its 1 MiB cap; 5000 decision(s) not logged, 1 of them denials; every denied name is in the review queue\n",
			"  ↳ the agent's decisions outgrew netd's logs; read what it did with `abox logs --transcript r1`\n",
		}},
		{"within", &telemetry.Harvest{DNS: []policy.DNSRecord{{Name: "a.test", Verdict: policy.Denied}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			a := &App{Err: &b}
			a.printSummary(&sandbox.Outcome{ID: "r1", Result: "exited", Harvest: tc.harvest}, false, "warn")
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			if tc.want == nil && strings.Contains(b.String(), "log cap") {
				t.Errorf("a run within its caps reports one:\n%s", b.String())
			}
		})
	}
}
