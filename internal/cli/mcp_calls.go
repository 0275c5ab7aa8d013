package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/termtext"
)

// maxSummaryCalls is how many MCP tool calls a run's summary lists.
const maxSummaryCalls = 10

// printMCPCalls prints, in a run's summary, the tool calls netd forwarded to the gateway or
// refused, from the harvested mcp.jsonl: a count by verdict, then one line per call.
func printMCPCalls(w io.Writer, records []policy.MCPRecord) {
	var calls []policy.MCPRecord
	verdicts := map[string]int{}
	for _, r := range records {
		if r.Method == "tools/call" {
			calls = append(calls, r)
			verdicts[r.Verdict]++
		}
	}
	if len(calls) == 0 {
		return
	}
	var counts []string
	for _, v := range []string{policy.Allowed, policy.Denied, policy.Error} {
		if verdicts[v] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", verdicts[v], v))
		}
	}
	fmt.Fprintf(w, "  mcp tool calls: %d (%s)\n", len(calls), strings.Join(counts, ", "))
	for i, r := range calls {
		if i == maxSummaryCalls {
			fmt.Fprintf(w, "    and %d more; `abox logs --gateway` lists them all\n", len(calls)-i)
			break
		}
		fmt.Fprintf(w, "    %-7s %s %s%s\n", r.Verdict, mcpTarget(r), millis(r.DurMS), reasonSuffix(r.Reason))
	}
}

// mcpTarget is server:tool for a call netd attributed, the tool alone for one it refused, and
// the method for any other request. Every part can come from the agent, so it is made
// printable: a tool name must not reach the terminal as an escape sequence.
func mcpTarget(r policy.MCPRecord) string {
	switch {
	case r.Tool != "" && r.Server != "":
		return termtext.Line(r.Server + ":" + r.Tool)
	case r.Tool != "":
		return termtext.Line(r.Tool)
	}
	return termtext.Line(r.Method)
}

func millis(ms int64) string { return strconv.FormatInt(ms, 10) + "ms" }

// reasonSuffix is the reason in parentheses, when there is one.
func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return "  (" + termtext.Line(reason) + ")"
}
