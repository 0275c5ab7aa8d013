package sandbox

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestConsumeEscapesOnATerminal: on a terminal (Pretty) every line the agent prints, stream-json
// event or plain text, reaches the screen with its control characters visible; the transcript,
// and stdout when it is not a terminal, keep the exact bytes.
func TestConsumeEscapesOnATerminal(t *testing.T) {
	agent := `{"type":"assistant","message":{"content":[{"type":"text","text":"\r\u001b[2A\u001b[J(none)"},{"type":"tool_use","name":"x\u202ey"}]}}` +
		"\n\r\x1b[2A\x1b[J(none) \x1b]0;title\x07 \u009b2J\n"
	for _, tc := range []struct {
		name   string
		pretty bool
		want   []string
	}{
		{"terminal", true, []string{`\r\x1b[2A\x1b[J(none)` + "\n", `→ x\u202ey` + "\n", `\r\x1b[2A\x1b[J(none) \x1b]0;title\a \u009b2J` + "\n"}},
		{"pipe", false, []string{agent}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Sandbox{Now: time.Now}
			var shown, transcript bytes.Buffer
			s.consume(strings.NewReader(agent), &transcript, Options{Output: &shown, Pretty: tc.pretty}, &Outcome{})
			if transcript.String() != agent {
				t.Errorf("transcript = %q, want the exact %q", transcript.String(), agent)
			}
			if got := shown.String(); got != strings.Join(tc.want, "") {
				t.Errorf("shown = %q, want %q", got, strings.Join(tc.want, ""))
			}
		})
	}
}
