package sandbox

import (
	"bytes"
	"strconv"
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

// stuckWriter is an output nobody reads: every write blocks until release is closed.
type stuckWriter struct{ release chan struct{} }

func (w stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	return len(p), nil
}

// TestConsumeDoesNotWaitForItsReader: abox's output is open but nobody reads it (a pager left on
// its first page, a terminal stopped with Ctrl-S). The agent's output is still read as it comes
// and every line is in the transcript; the run's end waits for the reader only a moment, and
// the run's notes count the lines that were not shown.
func TestConsumeDoesNotWaitForItsReader(t *testing.T) {
	var agent strings.Builder
	for i := range 20000 {
		agent.WriteString(strings.Repeat("x", 1000) + " " + strconv.Itoa(i) + "\n")
	}
	s := &Sandbox{Now: time.Now}
	out := &Outcome{}
	stuck := stuckWriter{make(chan struct{})}
	defer close(stuck.release)
	var transcript bytes.Buffer
	done := make(chan struct{})
	go func() {
		s.consume(strings.NewReader(agent.String()), &transcript, Options{Output: stuck}, out)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("consume waits for an output nobody reads")
	}
	if transcript.String() != agent.String() {
		t.Errorf("the transcript has %d bytes of the agent's %d", transcript.Len(), agent.Len())
	}
	if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "line(s) of the agent's output were not shown") {
		t.Errorf("notes %q, want the lines not shown counted", out.Notes)
	}
}
