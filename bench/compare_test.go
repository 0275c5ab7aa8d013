//go:build bench && e2e

package bench

import (
	"os"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// TestCompare measures a change to abox: the no-op run of $ABOX_BENCH_BASE (an abox binary
// built, say, from the commit before the change) against the binary under test, alternately,
// each in a 5-entry project of its own that it set up itself. It is skipped without
// $ABOX_BENCH_BASE; bench/run does not run it.
func TestCompare(t *testing.T) {
	base := os.Getenv("ABOX_BENCH_BASE")
	if base == "" {
		t.Skip("set ABOX_BENCH_BASE to an abox binary to compare with")
	}
	w := newBareWorld(t)
	old := w.addProject(t, "bench-base", w.secondWorkspace(t, "base"), smallEntries, base)
	cur := w.addProject(t, "bench-small", w.h.Workspace, smallEntries, harness.AboxBinary(t))
	var runs []runSample
	a, b := alternate(*pairs, func() float64 {
		s := w.runNoop(t, cur)
		runs = append(runs, s)
		return s.wall
	}, func() float64 { return w.runNoop(t, old).wall })
	f := NewFigure("0-compare", "abox run of a no-op prompt: this abox vs $ABOX_BENCH_BASE", "s",
		NewSeries("this abox", a), NewSeries("base", b), nil)
	f.Parts = phaseParts(runs[1:], phaseOrder(t, w, cur))
	f.Command = "ABOX_BENCH_BASE=<abox binary> bench/run -run TestCompare"
	w.write(t, f)
}
