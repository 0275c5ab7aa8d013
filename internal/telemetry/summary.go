package telemetry

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/termtext"
)

// MaxSummaryCalls is how many MCP tool calls a run's summary lists.
const MaxSummaryCalls = 10

// WriteToolCalls prints, in a run's summary, the tool calls netd forwarded to the gateway or
// refused, from the harvested mcp.jsonl: a count by verdict, then one line per call, up to
// [MaxSummaryCalls]. A run without tool calls prints nothing.
func WriteToolCalls(w io.Writer, records []policy.MCPRecord) {
	calls := ToolCalls(records)
	if len(calls) == 0 {
		return
	}
	var counts []string
	for _, v := range ToolCallVerdicts(calls) {
		counts = append(counts, fmt.Sprintf("%d %s", v.Count, v.Name))
	}
	fmt.Fprintf(w, "  mcp tool calls: %d (%s)\n", len(calls), strings.Join(counts, ", "))
	for i, r := range calls {
		if i == MaxSummaryCalls {
			fmt.Fprintf(w, "    and %d more; `abox logs --gateway` lists them all\n", len(calls)-i)
			break
		}
		fmt.Fprintf(w, "    %-7s %s %s%s\n", r.Verdict, mcpTarget(r), millis(r.DurMS), reasonSuffix(r.Reason))
	}
}

// WriteLogCaps says which of a run's decision logs hit a bound of netd's, each on a line of
// its own after indent, with a hint when any did.
func WriteLogCaps(w io.Writer, indent, run string, caps []LogCap) {
	for _, c := range caps {
		fmt.Fprintf(w, "%slog cap: %s\n", indent, c)
	}
	if len(caps) > 0 {
		fmt.Fprintf(w, "%s↳ the agent's decisions outgrew netd's logs; read what it did with `abox logs --transcript %s`\n", indent, run)
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
