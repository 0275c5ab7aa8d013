package telemetry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/policy"
)

// TestModelUsage: a run's model.jsonl, as netd writes it, sums to requests by status, tokens and
// models, each request once (its in-flight record and its final one); refusals and upstream
// failures are counted apart and add no model; a request that left netd and whose usage netd
// never saw (abandoned before its response, or in flight when netd died) counts as may have
// been billed.
func TestModelUsage(t *testing.T) {
	dir := t.TempDir()
	log := `{"ts":"2026-12-02T10:00:00.000Z","method":"POST","path":"/v1/messages","verdict":"allowed","status":200,"model":"claude-b","stream":true,"input_tokens":100,"output_tokens":20,"cache_read_tokens":50,"bytes_up":10,"bytes_down":20,"dur_ms":5}
{"ts":"2026-12-02T10:00:01.000Z","method":"POST","path":"/v1/messages","verdict":"allowed","status":200,"model":"claude-a","input_tokens":7,"output_tokens":3,"bytes_up":10,"bytes_down":20,"dur_ms":5}
{"ts":"2026-12-02T10:00:02.000Z","method":"POST","path":"/v1/messages","verdict":"allowed","status":429,"model":"claude-a","bytes_up":10,"bytes_down":20,"dur_ms":5}
{"ts":"2026-12-02T10:00:03.000Z","method":"GET","path":"/api/oauth/profile","verdict":"denied","reason":"path not forwarded","status":403,"bytes_up":0,"bytes_down":0,"dur_ms":0}
{"ts":"2026-12-02T10:00:04.000Z","method":"POST","path":"/v1/messages","verdict":"error","reason":"upstream: x","status":502,"model":"claude-z","bytes_up":1,"bytes_down":0,"dur_ms":0}
{"ts":"2026-12-02T10:00:05.000Z","method":"POST","path":"/v1/messages","verdict":"allowed","reason":"response cut: the agent hung up","status":200,"model":"claude-a","stream":true,"input_tokens":10,"output_tokens":1,"bytes_up":10,"bytes_down":20,"dur_ms":5}
{"ts":"2026-12-02T10:00:06.000Z","id":"a1","in_flight":true,"method":"POST","path":"/v1/messages","verdict":"allowed","reason":"in flight","model":"claude-a","bytes_up":10,"bytes_down":0,"dur_ms":0}
{"ts":"2026-12-02T10:00:07.000Z","id":"b2","in_flight":true,"method":"POST","path":"/v1/messages","verdict":"allowed","reason":"in flight","model":"claude-c","bytes_up":10,"bytes_down":0,"dur_ms":0}
{"ts":"2026-12-02T10:00:06.000Z","id":"a1","method":"POST","path":"/v1/messages","verdict":"allowed","status":200,"model":"claude-a","input_tokens":1000,"output_tokens":2000,"bytes_up":10,"bytes_down":20,"dur_ms":5}
{"ts":"2026-12-02T10:00:08.000Z","id":"c3","in_flight":true,"method":"POST","path":"/v1/messages","verdict":"allowed","reason":"in flight","model":"claude-a","bytes_up":10,"bytes_down":0,"dur_ms":0}
{"ts":"2026-12-02T10:00:08.000Z","id":"c3","method":"POST","path":"/v1/messages","verdict":"allowed","reason":"response cut: no response seen: the agent hung up","model":"claude-a","bytes_up":10,"bytes_down":0,"dur_ms":9000}
`
	if err := os.WriteFile(filepath.Join(dir, policy.ModelLog), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHarvest(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The request a1 counts once, with its final record's usage; b2 was in flight when netd
	// died and c3 was abandoned before its response: both may have been billed.
	want := &ModelUsage{Requests: 9, Statuses: map[string]int{"200": 4, "429": 1, "403": 1, "502": 1}, Refused: 1, Failed: 1, Cut: 1,
		MayHaveBeenBilled: 2, InputTokens: 1117, OutputTokens: 2024, CacheReadTokens: 50, Models: []string{"claude-a", "claude-b", "claude-c"}}
	if diff := cmp.Diff(want, h.ModelUsage()); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	const line = "9 requests (200×4, 403×1, 429×1, 502×1) · 1117 tokens in, 2024 out, 50 cache read, 0 cache written · claude-a, claude-b, claude-c · " +
		"1 refused by netd · 1 failed upstream (not sent) · 1 cut short (output tokens at least those counted) · 2 sent with no usage seen: may have been billed, tokens unknown"
	if got := h.ModelUsage().String(); got != line {
		t.Errorf("String() = %q\nwant       %q", got, line)
	}
	empty, err := ReadHarvest(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if u := empty.ModelUsage(); u != nil {
		t.Errorf("a run without model requests has usage %+v", u)
	}
}
