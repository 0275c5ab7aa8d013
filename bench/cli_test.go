//go:build bench && e2e

package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/telemetry"
)

// History synthesised for the CLI figures.
const (
	historyRuns     = 100
	deniedPerRun    = 20  // DNS denials per run
	refusedPerRun   = 5   // refused connections per run
	deniedNamesPool = 300 // distinct names the denials are drawn from
)

// benchCLI: render, doctor (no probes) and egress list on the 500-entry project with 100 runs
// of history, against the same commands on the 5-entry project with none.
func benchCLI(t *testing.T, w *world) {
	w.writeHistory(t, w.big, historyRuns)
	w.writeHistory(t, w.small, 0)
	var version []float64
	for range *pairs {
		version = append(version, w.abox(t, w.small, "--version").Wall.Seconds()*1000)
	}
	for _, c := range []struct {
		id   string
		args []string
		ok   func(int) bool
	}{
		{"6a-cli-render", []string{"render"}, func(c int) bool { return c == 0 }},
		{"6b-cli-doctor", []string{"doctor"}, func(c int) bool { return c == 0 || c == 2 }}, // 2: a check failed
		{"6c-cli-egress-list", []string{"egress", "list"}, func(c int) bool { return c == 0 }},
	} {
		run := func(p *project) func() float64 {
			return func() float64 {
				m := w.abox(t, p, c.args...)
				if !c.ok(m.ExitCode) {
					t.Fatalf("abox %s: exit %d\n%s%s", strings.Join(c.args, " "), m.ExitCode, tail(m.Stdout), tail(m.Stderr))
				}
				return m.Wall.Seconds() * 1000
			}
		}
		a, b := alternate(*pairs, run(w.big), run(w.small))
		f := NewFigure(c.id, "abox "+strings.Join(c.args, " ")+": 500 entries and 100 runs of history vs 5 entries and none",
			"ms", NewSeries("500 entries, 100 runs", a), NewSeries("5 entries, no runs", b), nil)
		f.Parts = []Part{{Name: "abox --version (process start)", Stat: Summarize(version)}}
		f.Command = "bench/run -run TestBench/cli"
		w.write(t, f)
	}
}

// writeHistory replaces p's runs.jsonl and denied.jsonl with n synthetic runs: each with
// deniedPerRun DNS denials and refusedPerRun refused connections, drawn from a pool of names.
func (w *world) writeHistory(t *testing.T, p *project, n int) {
	t.Helper()
	var runs, denied strings.Builder
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("%08x", 0xbe000000+i)
		ts := start.Add(time.Duration(i) * time.Hour).Format(time.RFC3339)
		rec := telemetry.RunRecord{ID: id, TS: ts, Project: p.name, Profile: w.h.Profile, Kind: "run",
			PromptSHA: "0123456789abcdef", DurationS: 42.5, SessionID: "session-" + id,
			Container: "agent-" + p.name + "-" + id, Transcript: "/nonexistent/transcript.jsonl",
			RunDir: "/nonexistent", PermissionMode: "acceptEdits", Servers: []string{"echo"},
			ToolCalls: 12, DeniedDomains: deniedPerRun, RefusedConns: refusedPerRun, Outcome: "exited"}
		b, _ := json.Marshal(rec)
		runs.Write(append(b, '\n'))
		for j := range deniedPerRun + refusedPerRun {
			kind := telemetry.DeniedDNS
			if j >= deniedPerRun {
				kind = telemetry.DeniedConn
			}
			d := telemetry.Denial{Run: id, TS: ts, Kind: kind, Count: 1 + j%3,
				Name: fmt.Sprintf("denied%03d.example.test", (i*7+j)%deniedNamesPool)}
			b, _ := json.Marshal(d)
			denied.Write(append(b, '\n'))
		}
	}
	dir := w.stateDir(p)
	for name, data := range map[string]string{"runs.jsonl": runs.String(), "denied.jsonl": denied.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
