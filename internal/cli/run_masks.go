package cli

import (
	"fmt"
	"io"

	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/termtext"
)

// printMaskEvents prints, in a run's summary, the masks that did not hold through the run.
func printMaskEvents(w io.Writer, events []telemetry.MaskEvent) {
	failed := false
	for _, e := range events {
		fmt.Fprintf(w, "  %s\n", termtext.Line(e.String()))
		failed = failed || e.Failed()
	}
	if failed {
		fmt.Fprintf(w, "  ↳ review what abox moved aside without running anything in it, then remove it; `abox doctor` fails until you do\n")
	}
}

// maskFailure is the error of a run whose agent put something in place of a masked path.
func maskFailure(out *sandbox.Outcome) error {
	n := 0
	for _, e := range out.MaskEvents {
		if e.Failed() {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return errorf("read the run's summary above, or `abox logs --runs`; `abox doctor` names the quarantine",
		"the agent put something in place of %d masked path(s) during run %s", n, out.ID)
}
