package doctor

import (
	"fmt"
	"io"
	"strings"

	"github.com/aboxhq/abox/internal/termtext"
)

// Report is a whole audit, as `abox doctor --json` prints it. The shape is stable:
//
//	{"checks": [{"id", "title", "status", "detail", "hint", "data"}, …],
//	 "summary": {"ok", "warn", "fail", "skip"},
//	 "risks": [{"id", "title", "detail", "hint", "data"}, …]}
type Report struct {
	Checks  []Result `json:"checks"`
	Summary Summary  `json:"summary"`
	Risks   []Risk   `json:"risks"`
}

// NewReport assembles a report; nil lists become empty ones, so the JSON never holds null.
func NewReport(checks []Result, risks []Risk) Report {
	if checks == nil {
		checks = []Result{}
	}
	if risks == nil {
		risks = []Risk{}
	}
	for i := range risks {
		if risks[i].Data == nil {
			risks[i].Data = map[string]any{}
		}
		for k, v := range risks[i].Data {
			risks[i].Data[k] = nonNil(v)
		}
	}
	return Report{Checks: checks, Summary: Summarize(checks), Risks: risks}
}

// Failed reports whether any check failed.
func (r Report) Failed() bool { return r.Summary.Fail > 0 }

// TextOptions control [Report.WriteText].
type TextOptions struct {
	All   bool // list passing checks too
	Color bool // ANSI colour on the glyphs
}

// Glyphs of the four statuses.
var glyphs = map[Status]string{OK: "✔", Warn: "!", Fail: "✖", Skip: "-"}

var colors = map[Status]string{OK: "32", Warn: "33", Fail: "31", Skip: "2"}

// WriteText prints the report for a person: one line per check that did not pass (every check
// with All), "glyph title: detail" and an indented "↳ hint" under a warn or fail; then the
// residual risks, always; then the summary line. It is the report's printing edge: every title,
// detail line and hint goes through [termtext.Line], so nothing a check quoted can drive the
// terminal.
func (r Report) WriteText(w io.Writer, o TextOptions) {
	for _, c := range r.Checks {
		if c.Status == OK && !o.All {
			continue
		}
		writeItem(w, o, c.Status, c.Title, c.Detail, c.Hint, c.Status == Warn || c.Status == Fail)
	}
	if len(r.Risks) > 0 {
		fmt.Fprintln(w, "\nresidual risks (known, not prevented):")
		for _, k := range r.Risks {
			if k.Applies {
				writeItem(w, o, Warn, k.Title, k.Detail, k.Hint, true)
			} else {
				writeItem(w, o, Skip, k.Title, k.Detail, "", false)
			}
		}
	}
	fmt.Fprintf(w, "\n%s\n", r.Summary)
}

func writeItem(w io.Writer, o TextOptions, s Status, title, detail, hint string, showHint bool) {
	glyph := glyphs[s]
	if o.Color {
		glyph = "\x1b[" + colors[s] + "m" + glyph + "\x1b[0m"
	}
	lines := strings.Split(strings.TrimRight(detail, "\n"), "\n")
	fmt.Fprintf(w, "%s %s: %s\n", glyph, termtext.Line(title), termtext.Line(lines[0]))
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "    %s\n", termtext.Line(l))
	}
	if showHint && hint != "" {
		fmt.Fprintf(w, "  ↳ %s\n", termtext.Line(hint))
	}
}
