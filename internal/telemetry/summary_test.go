package telemetry

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/policy"
)

func TestWriteToolCalls(t *testing.T) {
	records := []policy.MCPRecord{
		{Method: "initialize", Verdict: policy.Allowed, DurMS: 3},
		{Method: "tools/list", Verdict: policy.Allowed, DurMS: 5},
		{Method: "tools/call", Server: "echo", Tool: "echo", Verdict: policy.Allowed, DurMS: 14},
		{Method: "tools/call", Tool: "whoami\x1b[2J", Verdict: policy.Denied, Reason: `tool "whoami\x1b[2J" is not allowed for this project`},
		{Method: "tools/call", Server: "echo", Tool: "echo", Verdict: policy.Error, Reason: "gateway: EOF", DurMS: 2},
	}
	var b strings.Builder
	WriteToolCalls(&b, records)
	want := `  mcp tool calls: 3 (1 allowed, 1 denied, 1 error)
    allowed echo:echo 14ms
    denied  whoami\x1b[2J 0ms  (tool "whoami\x1b[2J" is not allowed for this project)
    error   echo:echo 2ms  (gateway: EOF)
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteToolCalls (-want +got):\n%s", diff)
	}
}

func TestWriteToolCallsLimit(t *testing.T) {
	var records []policy.MCPRecord
	for i := range MaxSummaryCalls + 3 {
		records = append(records, policy.MCPRecord{Method: "tools/call", Server: "s", Tool: fmt.Sprint("t", i), Verdict: policy.Allowed})
	}
	var b strings.Builder
	WriteToolCalls(&b, records)
	if got := strings.Count(b.String(), "\n"); got != MaxSummaryCalls+2 {
		t.Errorf("%d lines, want the count, %d calls and the rest:\n%s", got, MaxSummaryCalls, b.String())
	}
	if !strings.Contains(b.String(), "and 3 more; `abox logs --gateway` lists them all") {
		t.Errorf("no pointer to the rest:\n%s", b.String())
	}
	b.Reset()
	WriteToolCalls(&b, []policy.MCPRecord{{Method: "initialize", Verdict: policy.Allowed}})
	if b.Len() != 0 {
		t.Errorf("a run without tool calls printed %q", b.String())
	}
}

// TestWriteLogCaps: each capped log on a line of its own after the indent, then the hint naming
// the run's transcript; no caps, no lines.
func TestWriteLogCaps(t *testing.T) {
	var b strings.Builder
	WriteLogCaps(&b, "  ", "r1", []LogCap{{Log: policy.DNSLog, Limit: 1 << 20, Dropped: 3, Counts: CountsFinal}, {Log: policy.MCPLog, Counts: CountsUnknown}})
	want := `  log cap: dns.jsonl: reached its 1 MiB cap; 3 decision(s) not logged; every denied name is in the review queue
  log cap: mcp.jsonl: reached its cap; netd left no count of what it dropped
  ↳ the agent's decisions outgrew netd's logs; read what it did with ` + "`abox logs --transcript r1`" + `
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteLogCaps (-want +got):\n%s", diff)
	}
	b.Reset()
	WriteLogCaps(&b, "  ", "r1", nil)
	if b.Len() != 0 {
		t.Errorf("a run within its caps printed %q", b.String())
	}
}
