package telemetry

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/watch"
)

// TestRunsReport: the newest runs first, a row each with "-" for what was not measured, then
// what each run says beyond its row; an isolated run shows its branch's state now, read from
// its record, with the review hint while it is pending.
func TestRunsReport(t *testing.T) {
	proj := paths.Project{Dir: t.TempDir()}
	os.MkdirAll(proj.Isolated(), 0o700)
	for id, rec := range map[string]string{
		"i1": `{"id":"i1","branch":"abox/i1","state":"pending"}`,
		"i2": `{"id":"i2","branch":"abox/i2","state":"pending","tip":"abc"}`,
		"i3": `{"id":"i3","branch":"abox/i3","state":"merged"}`,
		"i4": `{`,
	} {
		os.WriteFile(proj.IsolatedRun(id), []byte(rec), 0o600)
	}
	runs := []RunRecord{
		{ID: "r1", TS: "t1", Outcome: "exited", DurationS: 1.26, DroppedPackets: 3, ExecChanges: []watch.ExecChange{{Name: "Makefile"}},
			SessionID: "s\x1b[2J", Model: &ModelUsage{Requests: 2}, Masks: []MaskEvent{{Mask: ".env", Kind: MaskMoved}},
			LogCaps: []LogCap{{Log: policy.DNSLog, Counts: CountsUnknown}}},
		{ID: "i1", TS: "t2", Branch: "abox/i1", DroppedPackets: -1},
		{ID: "i2", TS: "t3", Branch: "abox/i2", DroppedPackets: -1},
		{ID: "i3", TS: "t4", Branch: "abox/i3", DroppedPackets: -1},
		{ID: "i4", TS: "t5", Branch: "abox/i4", DroppedPackets: -1},
		{ID: "i5", TS: "t6", Branch: "abox/i5", DroppedPackets: -1},
	}
	rep := NewRunsReport(runs, 10, &isolate.Repo{Project: proj})
	var states []string
	for _, r := range rep.Rows {
		states = append(states, r.ID+"="+r.Isolated)
	}
	if diff := cmp.Diff([]string{"i5=gone", "i4=unreadable", "i3=merged", "i2=pending", "i1=" + PendingNotCollected, "r1="}, states); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	want := `RUN  WHEN  MODE  OUTCOME  EXIT  SECS  DENIED  REFUSED  DROPPED  EXEC  SESSION
i5   t6                   0     0.0   0       0        -        -     
i4   t5                   0     0.0   0       0        -        -     
i3   t4                   0     0.0   0       0        -        -     
i2   t3                   0     0.0   0       0        -        -     
i1   t2                   0     0.0   0       0        -        -     
r1   t1          exited   0     1.3   0       0        3        1     s\x1b[2J
run i5: isolated, branch abox/i5, gone
run i4: isolated, branch abox/i4, unreadable
run i3: isolated, branch abox/i3, merged
run i2: isolated, branch abox/i2, pending
  ↳ review with ` + "`abox diff i2`, then `abox merge i2` or `abox discard i2`" + `
run i1: isolated, branch abox/i1, pending, not collected
run r1: model API: 2 requests · 0 tokens in, 0 out
run r1: log cap: dns.jsonl: reached its cap; netd left no count of what it dropped
run r1: mask moved: .env; the masked content is no longer in the workspace
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
	if rep := NewRunsReport(runs, 1, &isolate.Repo{Project: proj}); len(rep.Rows) != 1 || rep.Rows[0].ID != "i5" {
		t.Errorf("limit 1 = %+v, want the newest run", rep.Rows)
	}
	empty := NewRunsReport(nil, 10, &isolate.Repo{Project: proj})
	if data, _ := json.Marshal(empty.Rows); string(data) != "[]" {
		t.Errorf("JSON of no runs = %s, want []", data)
	}
	b.Reset()
	empty.WriteText(&b)
	if want := "no runs yet; start one with `abox run \"<prompt>\"`\n"; b.String() != want {
		t.Errorf("no runs printed %q, want %q", b.String(), want)
	}
}

// harvested is runs whose netd directories hold logs: r1 with dns.jsonl past its cap and an
// MCP log, r2 with neither, r3 without a directory (it is left out).
func harvested(t *testing.T) []RunRecord {
	t.Helper()
	root := t.TempDir()
	for _, id := range []string{"r1", "r2"} {
		os.MkdirAll(filepath.Join(root, id, "netd"), 0o700)
	}
	d1 := filepath.Join(root, "r1", "netd")
	write(t, d1, policy.DNSLog, `{"ts":"t1","name":"ok.test.","type":"A","verdict":"allowed"}
{"ts":"t2","name":"evil\u001b[2J.test.","type":"AAAA","verdict":"denied","count":40,"last":"t9"}
{"ts":"t3","truncated":true,"limit":1048576}
`)
	write(t, d1, policy.LogStatsFile, `{"final":true,"logs":{"dns.jsonl":{"limit":1048576,"dropped":5,"denied":[{"name":"wanted.test.","count":2}]}}}`)
	write(t, d1, policy.MCPLog, `{"ts":"m1","method":"initialize","verdict":"allowed","dur_ms":3}
{"ts":"m2","method":"tools/call","server":"gh","tool":"get\nissue","verdict":"allowed","dur_ms":14}
{"ts":"m3","method":"tools/call","tool":"rm","verdict":"denied","reason":"tool \"rm\" is not allowed"}
`)
	return []RunRecord{{ID: "r1", RunDir: filepath.Join(root, "r1")}, {ID: "r2", RunDir: filepath.Join(root, "r2")}, {ID: "r3", RunDir: filepath.Join(root, "r3")}}
}

// TestDNSReport: a line per query (an aggregate says how often it repeated until when), the
// denied names of each run past the log's cap too, and the logs that hit a bound; names are
// escaped in the text, exact in the JSON form.
func TestDNSReport(t *testing.T) {
	rep := NewDNSReport(harvested(t), 10)
	var b bytes.Buffer
	rep.WriteText(&b)
	want := `allowed t1 ok.test (A) run r1
denied  t2 evil\x1b[2J.test (AAAA) run r1 (x40 until t9)
denied names, with their counts:
  run r1: evil\x1b[2J.test (x40), wanted.test (x2)
netd's logs hit a bound:
  run r1: dns.jsonl: reached its 1 MiB cap; 5 decision(s) not logged; every denied name is in the review queue
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
	if len(rep.Lines) != 2 || rep.Lines[1].Name != "evil\x1b[2J.test" || rep.Lines[1].Run != "r1" {
		t.Errorf("Lines = %+v, want both queries, exact", rep.Lines)
	}
	// the newest run only: r3, whose harvest does not read
	if rep := NewDNSReport(harvested(t), 1); rep.Lines == nil || len(rep.Lines) != 0 || rep.Denied != nil || rep.Caps != nil {
		t.Errorf("a run without a harvest = %+v, want empty lines and nothing else", rep)
	}
}

// TestMCPReport: a line per request netd forwarded or refused, the tool attributed to its
// server, its time and netd's reason; the tool name is escaped.
func TestMCPReport(t *testing.T) {
	rep := NewMCPReport(harvested(t), 10)
	var b bytes.Buffer
	rep.WriteText(&b)
	want := `allowed m1 initialize 3ms run r1
allowed m2 tools/call gh:get\nissue 14ms run r1
denied  m3 tools/call rm 0ms run r1  (tool "rm" is not allowed)
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
	if rep := NewMCPReport(nil, 10); rep.Lines == nil {
		t.Error("Lines of no runs is nil; its JSON would be null, not []")
	}
}

// TestWriteTranscript: pretty, the events that show; as JSON, every line one JSON value, a
// line that is not JSON as a string.
func TestWriteTranscript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	os.WriteFile(path, []byte(`{"type":"system","subtype":"init","session_id":"s-1"}
not json
`), 0o600)
	var b bytes.Buffer
	if err := WriteTranscript(&b, path, false); err != nil || b.String() != "session s-1\n" {
		t.Errorf("pretty = %q, %v", b.String(), err)
	}
	b.Reset()
	if err := WriteTranscript(&b, path, true); err != nil || b.String() != `{"type":"system","subtype":"init","session_id":"s-1"}`+"\n\"not json\"\n" {
		t.Errorf("JSON = %q, %v", b.String(), err)
	}
	if err := WriteTranscript(&b, filepath.Join(t.TempDir(), "none"), false); err == nil {
		t.Error("a missing transcript is no error")
	}
}

func TestFormatCounts(t *testing.T) {
	list := []NameCount{{"a\x1b", 3}, {"b", 2}, {"c", 1}}
	if got, want := FormatCounts(list, 2), `a\x1b (x3), b (x2), and 1 more`; got != want {
		t.Errorf("FormatCounts(2) = %q, want %q", got, want)
	}
	if got, want := FormatCounts(list, 3), `a\x1b (x3), b (x2), c (x1)`; got != want {
		t.Errorf("FormatCounts(3) = %q, want %q", got, want)
	}
}
