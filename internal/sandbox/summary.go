package sandbox

import (
	"fmt"
	"io"

	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/termtext"
)

// Summary is the text abox prints on stderr once a run or shell has ended. Every line goes
// through termtext.Line: the session id, the names netd logged, the workspace files the run
// changed and the notes (the agent's last stderr line among them) come from the agent, which
// must not be able to rewrite the summary on the terminal.
//
// OnExecChange is the manifest's run.on_exec_change and ExecExit the exit status a run that
// fails on it gets: the section of execution-adjacent changes says both.
type Summary struct {
	Outcome      *Outcome
	Shell        bool
	OnExecChange string
	ExecExit     int
}

func line(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, termtext.Line(fmt.Sprintf(format, args...)))
}

// WriteText writes the summary to w.
func (s Summary) WriteText(w io.Writer) {
	out := s.Outcome
	kind := "run"
	if s.Shell {
		kind = "shell"
	}
	head := fmt.Sprintf("%s %s · %s · exit %d · %.1fs", kind, out.ID, out.Result, out.ExitCode, out.Duration.Seconds())
	if out.Summary.SessionID != "" {
		head += " · session " + out.Summary.SessionID
	}
	fmt.Fprintln(w)
	line(w, "%s", head)
	if out.Transcript != "" {
		line(w, "  transcript: %s", out.Transcript)
	}
	if n := len(out.Summary.ToolCalls); n > 0 {
		line(w, "  tool calls: %d", n)
	}
	if h := out.Harvest; h != nil {
		telemetry.WriteToolCalls(w, h.MCP)
		if u := h.ModelUsage(); u != nil {
			line(w, "  model API: %s", u)
		}
		if d := h.DeniedNames(); len(d) > 0 {
			line(w, "  denied DNS names: %s", telemetry.FormatCounts(d, 10))
		}
		if r := h.RefusedConnections(); len(r) > 0 {
			line(w, "  refused connections (SNI/Host): %s", telemetry.FormatCounts(r, 10))
		}
		if n := h.Dropped(); n > 0 {
			line(w, "  dropped packets: %d", n)
		}
		if d, r := h.DeniedNames(), h.RefusedConnections(); len(d)+len(r) > 0 {
			line(w, "  ↳ review them with `abox egress list`; allow one with `abox egress add <host>`")
		}
		if e := h.EncryptedHellos(); len(e) > 0 {
			line(w, "  refused encrypted client hellos (outer name): %s", telemetry.FormatCounts(e, 10))
			line(w, "  ↳ the server asked for was encrypted, so netd cannot judge it; allowing the outer name changes nothing")
		}
		telemetry.WriteLogCaps(w, "  ", out.ID, h.LogCaps())
	}
	out.Exec.WriteText(w, s.OnExecChange, s.ExecExit)
	for _, n := range out.Notes {
		line(w, "  note: %s", n)
	}
	WriteMaskEvents(w, out.MaskEvents)
}

// WriteMaskEvents writes, in a run's summary, the masks that did not hold through the run.
func WriteMaskEvents(w io.Writer, events []telemetry.MaskEvent) {
	failed := false
	for _, e := range events {
		fmt.Fprintf(w, "  %s\n", termtext.Line(e.String()))
		failed = failed || e.Failed()
	}
	if failed {
		fmt.Fprintf(w, "  ↳ review what abox moved aside without running anything in it, then remove it; `abox doctor` fails until you do\n")
	}
}

// FailedMasks is how many masked paths the agent put something in place of during the run.
func (o *Outcome) FailedMasks() int {
	n := 0
	for _, e := range o.MaskEvents {
		if e.Failed() {
			n++
		}
	}
	return n
}
