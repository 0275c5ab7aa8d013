package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/policy"
)

func TestPrintMCPCalls(t *testing.T) {
	records := []policy.MCPRecord{
		{Method: "initialize", Verdict: policy.Allowed, DurMS: 3},
		{Method: "tools/list", Verdict: policy.Allowed, DurMS: 5},
		{Method: "tools/call", Server: "echo", Tool: "echo", Verdict: policy.Allowed, DurMS: 14},
		{Method: "tools/call", Tool: "whoami\x1b[2J", Verdict: policy.Denied, Reason: `tool "whoami\x1b[2J" is not allowed for this project`},
		{Method: "tools/call", Server: "echo", Tool: "echo", Verdict: policy.Error, Reason: "gateway: EOF", DurMS: 2},
	}
	var b strings.Builder
	printMCPCalls(&b, records)
	want := `  mcp tool calls: 3 (1 allowed, 1 denied, 1 error)
    allowed echo:echo 14ms
    denied  whoami\x1b[2J 0ms  (tool "whoami\x1b[2J" is not allowed for this project)
    error   echo:echo 2ms  (gateway: EOF)
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("printMCPCalls (-want +got):\n%s", diff)
	}
}

func TestPrintMCPCallsLimit(t *testing.T) {
	var records []policy.MCPRecord
	for i := range maxSummaryCalls + 3 {
		records = append(records, policy.MCPRecord{Method: "tools/call", Server: "s", Tool: fmt.Sprint("t", i), Verdict: policy.Allowed})
	}
	var b strings.Builder
	printMCPCalls(&b, records)
	if got := strings.Count(b.String(), "\n"); got != maxSummaryCalls+2 {
		t.Errorf("%d lines, want the count, %d calls and the rest:\n%s", got, maxSummaryCalls, b.String())
	}
	if !strings.Contains(b.String(), "and 3 more; `abox logs --gateway` lists them all") {
		t.Errorf("no pointer to the rest:\n%s", b.String())
	}
	b.Reset()
	printMCPCalls(&b, []policy.MCPRecord{{Method: "initialize", Verdict: policy.Allowed}})
	if b.Len() != 0 {
		t.Errorf("a run without tool calls printed %q", b.String())
	}
}
