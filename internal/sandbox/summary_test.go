package sandbox

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/watch"
)

// TestMaskEventsInTheSummary: a run whose agent put something in a mask's place prints it,
// escaped, with what to do, and fails; content that only moved is printed and does not fail.
func TestMaskEventsInTheSummary(t *testing.T) {
	moved := telemetry.MaskEvent{Mask: "config/master.key", Kind: telemetry.MaskMoved, Original: "config.moved/master.key"}
	planted := telemetry.MaskEvent{Mask: ".git/hooks", Kind: telemetry.MaskPlanted, Planted: ".git/hooks", PlantedType: "directory",
		Quarantine: "/state/q/1-hooks", Original: ".git.moved\x1b[2J/hooks"}
	for _, tc := range []struct {
		name   string
		events []telemetry.MaskEvent
		want   []string
		fails  bool
	}{
		{"moved", []telemetry.MaskEvent{moved}, []string{"mask moved: config/master.key; the masked content is now at config.moved/master.key"}, false},
		{"planted", []telemetry.MaskEvent{moved, planted}, []string{
			"mask replaced: .git/hooks holds a directory the agent put there; abox moved it to /state/q/1-hooks",
			`.git.moved\x1b[2J/hooks`, "↳ review what abox moved aside"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			WriteMaskEvents(&b, tc.events)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			if strings.Contains(b.String(), "\x1b") {
				t.Errorf("the summary prints a raw escape from a workspace name:\n%q", b.String())
			}
			if n := (&Outcome{ID: "r1", MaskEvents: tc.events}).FailedMasks(); (n > 0) != tc.fails {
				t.Errorf("FailedMasks = %d, want failing %v", n, tc.fails)
			}
		})
	}
}

// TestSummaryText: the head line, the counts and the sections of other code in their place;
// a shell says so; nothing the agent wrote reaches the terminal raw.
func TestSummaryText(t *testing.T) {
	out := &Outcome{ID: "r1", Result: "exited", ExitCode: 2, Duration: 1500 * time.Millisecond, Transcript: "/t/r1.jsonl",
		Summary: telemetry.Summary{SessionID: "s\x1b[2J"}, Notes: []string{"agent said \x07"}}
	var b bytes.Buffer
	Summary{Outcome: out}.WriteText(&b)
	want := "\nrun r1 · exited · exit 2 · 1.5s · session s\\x1b[2J\n  transcript: /t/r1.jsonl\n  note: agent said \\a\n"
	if b.String() != want {
		t.Errorf("summary =\n%q\nwant\n%q", b.String(), want)
	}
	// The execution-adjacent changes come after the counts and before the notes.
	out.Exec = &ExecReport{Changes: []watch.ExecChange{{Area: "file", Name: "Makefile", Change: "changed"}}}
	var x bytes.Buffer
	out.Exec.WriteText(&x, "warn", 4)
	b.Reset()
	Summary{Outcome: out, OnExecChange: "warn", ExecExit: 4}.WriteText(&b)
	if want := strings.Replace(want, "  note:", x.String()+"  note:", 1); x.Len() == 0 || b.String() != want {
		t.Errorf("summary with an exec change =\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	Summary{Outcome: &Outcome{ID: "r2", Result: "exited"}, Shell: true}.WriteText(&b)
	if !strings.HasPrefix(b.String(), "\nshell r2 · exited · exit 0 · 0.0s\n") {
		t.Errorf("shell summary = %q", b.String())
	}
}

// TestSummaryEncryptedHellos: connections refused for an encrypted ClientHello are counted
// under their outer name, among the refused connections and on a line of their own that says
// allowing the name would not help.
func TestSummaryEncryptedHellos(t *testing.T) {
	h := &telemetry.Harvest{Conns: []policy.ConnRecord{
		{Kind: policy.KindTLS, Name: "cdn.test", Verdict: policy.Denied, Reason: policy.ReasonECH, Kernel: true},
		{Kind: policy.KindTLS, Name: "cdn.test", Verdict: policy.Denied, Reason: policy.ReasonECH, Count: 2},
		{Kind: policy.KindTLS, Name: "evil.test", Verdict: policy.Denied, Reason: "not allowed"},
	}}
	var b bytes.Buffer
	Summary{Outcome: &Outcome{ID: "r1", Result: "exited", Harvest: h}}.WriteText(&b)
	for _, want := range []string{
		"  refused connections (SNI/Host): cdn.test (x3), evil.test (x1)\n",
		"  refused encrypted client hellos (outer name): cdn.test (x3)\n  ↳ the server asked for was encrypted",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	h.Conns = h.Conns[2:]
	b.Reset()
	Summary{Outcome: &Outcome{ID: "r1", Result: "exited", Harvest: h}}.WriteText(&b)
	if strings.Contains(b.String(), "encrypted") {
		t.Errorf("summary without an encrypted hello mentions one:\n%s", b.String())
	}
}
