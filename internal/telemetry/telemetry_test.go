package telemetry

import (
	"bytes"
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
	if diff := cmp.Diff([]NameCount{{"(no name)", 1}, {"front.test", 1}}, h.RefusedConnections()); diff != "" {
		t.Errorf("RefusedConnections (-want +got):\n%s", diff)
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
