package telemetry

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/policy"
)

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReadHarvest(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, policy.DNSLog, `{"name":"abox-selftest.invalid.","type":"A","verdict":"denied"}
{"name":"evil.test.","type":"A","verdict":"denied"}
{"name":"evil.test","type":"AAAA","verdict":"denied"}
{"name":"ok.test","type":"A","verdict":"allowed"}
{"name":"other.test","type":"A","verdict":"denied"}
truncated {"na
`)
	write(t, dir, policy.ConnLog, `{"kind":"tls","name":"abox-selftest.invalid","verdict":"denied"}
{"kind":"tls","name":"front.test","verdict":"denied"}
{"kind":"tls","name":"","verdict":"denied"}
{"kind":"tls","name":"ok.test","verdict":"allowed"}
{"kind":"tls","name":"cdn.test","verdict":"denied","reason":"encrypted client hello","kernel":true,"count":2}
{"kind":"tls","name":"cdn.test","verdict":"denied","reason":"encrypted client hello"}
`)
	write(t, dir, policy.MCPLog, `{"method":"tools/list","verdict":"allowed"}
{"method":"tools/call","tool":"echo","verdict":"allowed"}
{"method":"tools/call","tool":"rm","verdict":"denied"}
`)
	write(t, dir, policy.CountersLog, `{"dropped_packets":7}`)
	h, err := ReadHarvest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]NameCount{{"evil.test", 2}, {"other.test", 1}}, h.DeniedNames()); diff != "" {
		t.Errorf("DeniedNames (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]NameCount{{"cdn.test", 3}, {"(no name)", 1}, {"front.test", 1}}, h.RefusedConnections()); diff != "" {
		t.Errorf("RefusedConnections (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]NameCount{{"cdn.test", 3}}, h.EncryptedHellos()); diff != "" {
		t.Errorf("EncryptedHellos (-want +got):\n%s", diff)
	}
	if h.Dropped() != 7 || len(h.ToolCalls()) != 2 || len(h.Corrupt) != 1 {
		t.Errorf("dropped %d, tool calls %d, corrupt %v", h.Dropped(), len(h.ToolCalls()), h.Corrupt)
	}
	empty, _ := ReadHarvest(t.TempDir())
	if empty.Dropped() != -1 {
		t.Errorf("Dropped without counters = %d, want -1 (unknown)", empty.Dropped())
	}
}

func TestQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "denied.jsonl")
	h1 := &Harvest{DNS: []policy.DNSRecord{{Name: "a.test", Verdict: policy.Denied}, {Name: "a.test", Verdict: policy.Denied}, {Name: "b.test", Verdict: policy.Denied}}}
	h2 := &Harvest{DNS: []policy.DNSRecord{{Name: "a.test", Verdict: policy.Denied}},
		Conns: []policy.ConnRecord{{Name: "c.test", Verdict: policy.Denied}}}
	AppendDenials(path, "r1", "2026-11-01T00:00:00Z", h1)
	AppendDenials(path, "r2", "2026-11-02T00:00:00Z", h2)
	got, bad, err := Queue(path, func(n string) bool { return n == "b.test" })
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	want := []QueueItem{
		{Name: "a.test", Kind: DeniedDNS, Count: 3, Runs: 2, LastSeen: "2026-11-02T00:00:00Z"},
		{Name: "c.test", Kind: DeniedConn, Count: 1, Runs: 1, LastSeen: "2026-11-02T00:00:00Z"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Queue (-want +got):\n%s", diff)
	}
}

func TestRunsRoundTripAndCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	AppendRun(path, RunRecord{ID: "a1", ExitCode: 3})
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"id\": \"cut off\n")
	f.Close()
	AppendRun(path, RunRecord{ID: "b2"})
	runs, bad, err := ReadRuns(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ExitCode != 3 || runs[1].ID != "b2" {
		t.Errorf("runs = %+v", runs)
	}
	if len(bad) != 1 || bad[0].Line != 2 || !strings.HasSuffix(bad[0].String(), "runs.jsonl:2") {
		t.Errorf("corrupt = %v, want line 2 named", bad)
	}
	none, _, err := ReadRuns(filepath.Join(t.TempDir(), "missing"))
	if err != nil || none != nil {
		t.Errorf("missing file: %v %v", none, err)
	}
}

func TestTranscriptSummaryAndPretty(t *testing.T) {
	transcript := `{"type":"system","subtype":"init","session_id":"s-1"}
{"type":"assistant","message":{"content":[{"type":"text","text":"hello\n"},{"type":"tool_use","name":"Bash"}]},"session_id":"s-1"}
not json
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s-1"}
`
	s := ReadSummary(strings.NewReader(transcript))
	if s.SessionID != "s-1" || len(s.ToolCalls) != 1 || s.Result != "success" || s.LastText != "done" {
		t.Errorf("summary = %+v", s)
	}
	var out bytes.Buffer
	var sum Summary
	for _, l := range strings.Split(transcript, "\n") {
		if ev, ok := sum.Observe([]byte(l)); ok {
			Pretty(&out, ev)
		}
	}
	if want := "session s-1\nhello\n→ Bash\nresult: success\n"; out.String() != want {
		t.Errorf("Pretty = %q, want %q", out.String(), want)
	}
}

// TestHarvestPastTheCap: a flood filled dns.jsonl; the denial netd kept only in its table of
// denied names reaches the review queue, and the cap, with its counts, is reported.
func TestHarvestPastTheCap(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, policy.DNSLog, `{"name":"abox-selftest.invalid.","type":"A","verdict":"denied"}
{"name":"1.flood.test.","type":"AAAA","verdict":"allowed"}
{"name":"evil.test.","type":"A","verdict":"denied"}
{"name":"evil.test.","type":"A","verdict":"denied","count":40,"ts":"2026-11-01T10:00:00.000Z","last":"2026-11-01T10:00:02.000Z"}
{"ts":"2026-11-01T10:00:03.000Z","truncated":true,"limit":1048576}
{"name":"kept.test.","type":"A","verdict":"denied"}
`)
	write(t, dir, policy.LogStatsFile, `{"ts":"2026-11-01T10:01:00.000Z","final":true,"logs":{
"dns.jsonl":{"limit":1048576,"dropped":5000,"dropped_denied":1,"denied":[
  {"name":"abox-selftest.invalid.","count":1},{"name":"evil.test.","count":45},
  {"name":"kept.test.","count":1},{"name":"wanted.test.","count":1}]},
"conn.jsonl":{"limit":1048576,"denied":[{"name":"","count":2},{"name":"abox-selftest.invalid","count":2},{"name":"sni.test","count":3}]},
"mcp.jsonl":{"limit":1048576,"denied":[]}}}`)
	h, err := ReadHarvest(dir)
	if err != nil || len(h.Corrupt) != 0 {
		t.Fatal(err, h.Corrupt)
	}
	if diff := cmp.Diff([]NameCount{{"evil.test", 45}, {"kept.test", 1}, {"wanted.test", 1}}, h.DeniedNames()); diff != "" {
		t.Errorf("DeniedNames (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]NameCount{{"sni.test", 3}, {"(no name)", 2}}, h.RefusedConnections()); diff != "" {
		t.Errorf("RefusedConnections (-want +got):\n%s", diff)
	}
	for _, r := range h.DNS {
		if r.Name == "" {
			t.Errorf("the truncation line was read as a query: %+v", h.DNS)
		}
	}
	want := []LogCap{{Log: policy.DNSLog, Limit: 1 << 20, Dropped: 5000, DroppedDenied: 1, Counts: CountsFinal}}
	if diff := cmp.Diff(want, h.LogCaps()); diff != "" {
		t.Errorf("LogCaps (-want +got):\n%s", diff)
	}
	path := filepath.Join(t.TempDir(), "denied.jsonl")
	if err := AppendDenials(path, "r1", "2026-11-01T10:00:00Z", h); err != nil {
		t.Fatal(err)
	}
	q, _, _ := Queue(path, nil)
	if len(q) != 5 || !strings.Contains(fmt.Sprint(q), "{wanted.test dns 1 1 ") {
		t.Errorf("queue = %+v, want wanted.test, which only netd's table holds", q)
	}
}

// TestLogCapsWithoutStatistics: netd died before writing its statistics, or wrote them only
// part way; the truncation line alone still reports the cap.
func TestLogCapsWithoutStatistics(t *testing.T) {
	for _, stats := range []string{"", `{"ts":"x","final":fa`} {
		dir := t.TempDir()
		write(t, dir, policy.ConnLog, `{"kind":"tls","name":"a.test","verdict":"allowed"}
{"ts":"2026-11-01T10:00:03.000Z","truncated":true,"limit":2097152}
`)
		if stats != "" {
			write(t, dir, policy.LogStatsFile, stats)
		}
		h, err := ReadHarvest(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := []LogCap{{Log: policy.ConnLog, Limit: 2 << 20, Counts: CountsUnknown}}
		if diff := cmp.Diff(want, h.LogCaps()); diff != "" {
			t.Errorf("stats %q: LogCaps (-want +got):\n%s", stats, diff)
		}
		if stats != "" && len(h.Corrupt) != 1 {
			t.Errorf("a cut-off %s is not reported corrupt: %v", policy.LogStatsFile, h.Corrupt)
		}
	}
}

func TestLogCapString(t *testing.T) {
	for _, tc := range []struct {
		c    LogCap
		want string
	}{
		{LogCap{Log: "dns.jsonl", Limit: 1 << 20, Dropped: 12, DroppedDenied: 3, Counts: CountsFinal},
			"dns.jsonl: reached its 1 MiB cap; 12 decision(s) not logged, 3 of them denials; every denied name is in the review queue"},
		{LogCap{Log: "dns.jsonl", Limit: 256 << 20, Dropped: 9, DroppedDenied: 9, Untracked: 4, Lost: 2, Counts: CountsFinal},
			"dns.jsonl: reached its 256 MiB cap; 9 decision(s) not logged, 9 of them denials; 2 denial(s) recorded nowhere (log and table of denied names full): the review queue may lack their names"},
		{LogCap{Log: "conn.jsonl", Untracked: 4, Counts: CountsFinal},
			"conn.jsonl: netd's table of denied names was full, 4 later denial(s) are in the log alone; every denied name is in the review queue"},
		{LogCap{Log: "mcp.jsonl", Limit: 1 << 20, Counts: CountsUnknown},
			"mcp.jsonl: reached its 1 MiB cap; netd left no count of what it dropped"},
		{LogCap{Log: "dns.jsonl", Limit: 1 << 20, Dropped: 1, Failed: 2, Counts: CountsSnapshot},
			"dns.jsonl: reached its 1 MiB cap; 1 decision(s) not logged; 2 decision(s) could not be written (counts from netd's last snapshot: it did not stop cleanly)"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.c, got, tc.want)
		}
	}
}

// TestToolCallsAndVerdicts: only tools/call records are tool calls, in order; verdicts are
// counted in a fixed order, leaving out those with no call.
func TestToolCallsAndVerdicts(t *testing.T) {
	records := []policy.MCPRecord{
		{Method: "initialize", Verdict: policy.Allowed},
		{Method: "tools/call", Tool: "a", Verdict: policy.Error},
		{Method: "tools/list", Verdict: policy.Allowed},
		{Method: "tools/call", Tool: "b", Verdict: policy.Allowed},
		{Method: "tools/call", Tool: "c", Verdict: policy.Error},
	}
	calls := ToolCalls(records)
	var tools []string
	for _, c := range calls {
		tools = append(tools, c.Tool)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, tools); diff != "" {
		t.Errorf("ToolCalls (-want +got):\n%s", diff)
	}
	want := []NameCount{{Name: policy.Allowed, Count: 1}, {Name: policy.Error, Count: 2}}
	if diff := cmp.Diff(want, ToolCallVerdicts(calls)); diff != "" {
		t.Errorf("ToolCallVerdicts (-want +got):\n%s", diff)
	}
	if got := ToolCallVerdicts(ToolCalls(records[:1])); got != nil {
		t.Errorf("ToolCallVerdicts of no call = %v, want none", got)
	}
}
