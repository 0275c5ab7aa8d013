package toolcost

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/policy"
)

// costFixture is three tools of two servers: one narrowed (a), one whose tool name carries an
// escape sequence and whose other tool asks to be always loaded (b).
func costFixture() Report {
	tools := []json.RawMessage{
		json.RawMessage(`{"name":"a1", "inputSchema": {"type": "object"}}`),
		json.RawMessage(`{"name":"b1\u001b[2J","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`),
		json.RawMessage(`{"name":"b2","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"_meta":{"anthropic/alwaysLoad":true}}`),
	}
	return Of(tools, &policy.MCP{Tools: map[string]string{"a1": "a", "b1\x1b[2J": "b", "b2": "b"}}, map[string][]string{"a": {"a1"}})
}

// TestWriteTextUpfront: a Claude Code that sends every schema: the tables, the per-turn cost,
// what deferral would cost, the threshold it stays below, and the hint to narrow b, whose tool
// name is escaped everywhere.
func TestWriteTextUpfront(t *testing.T) {
	rep := costFixture()
	rep.Price("2.1.50", nil)
	var b strings.Builder
	rep.WriteText(&b)
	want := `TOOL       SERVER  ~TOKENS  ~NAME
b2         b       30       always loaded
b1\x1b[2J  b       22       5
a1         a       11       4

SERVER  TOOLS  ~TOKENS  ~NAMES  SHARE
b       2      52       5       83%
a       1      11       4       17%
total   3      63       9       100%

Claude Code 2.1.50 sends every MCP tool schema on every turn: tool search's default from 2.1.7 to 2.1.74 is its threshold mode, and agent_env sets neither ENABLE_TOOL_SEARCH nor ANTHROPIC_BASE_URL; these ~33 tokens stay below its threshold of 20000 tokens (10% of a 200000-token context window)
  per turn: ~63 tokens
  deferred (ENABLE_TOOL_SEARCH=true in agent_env): ~39 tokens per turn, and each schema (~TOKENS) when ToolSearch loads it

hint: b costs ~52 tokens per turn; narrow it to the tools the agent needs: ` + "`" + `abox mcp add b --tool b1\x1b[2J` + "`" + `
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
}

// TestWriteTextDeferred: a Claude Code that defers: names per turn plus the always-loaded
// schema, the range of a schema loaded on demand, and the hint in both figures.
func TestWriteTextDeferred(t *testing.T) {
	rep := costFixture()
	rep.Price("2.1.50", map[string]string{"ENABLE_TOOL_SEARCH": "auto:0"})
	var b strings.Builder
	rep.WriteText(&b)
	want := `TOOL       SERVER  ~TOKENS  ~NAME
b2         b       30       always loaded
b1\x1b[2J  b       22       5
a1         a       11       4

SERVER  TOOLS  ~TOKENS  ~NAMES  SHARE
b       2      52       5       83%
a       1      11       4       17%
total   3      63       9       100%

Claude Code 2.1.50 defers MCP tools: agent_env sets ENABLE_TOOL_SEARCH=auto:0
  these ~33 tokens of schemas reach its threshold of 0 tokens (0% of a 200000-token context window)
  per turn: ~9 tokens, the names of 3 tools, and ~30 for the schemas of the tools that ask to be always loaded
  per schema loaded on demand: ~11 to ~30 tokens (~TOKENS) when ToolSearch loads it; it then stays for the rest of the session
  with deferral off (ENABLE_TOOL_SEARCH=false in agent_env): ~63 tokens per turn

hint: b costs ~5 tokens per turn in names and ~52 in schemas as they load; narrow it to the tools the agent needs: ` + "`" + `abox mcp add b --tool b1\x1b[2J` + "`" + `
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
	b.Reset()
	Report{}.WriteText(&b)
	if b.String() != "the agent sees no tools\n" {
		t.Errorf("no tools printed %q", b.String())
	}
}
