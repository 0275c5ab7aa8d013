//go:build bench && e2e

package bench

import (
	"os"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// TestCompare measures a change to abox: the no-op run of $ABOX_BENCH_BASE (an abox binary
// built, say, from the commit before the change) against the binary under test ($ABOX_E2E_ABOX,
// else the working tree), alternately, each in a 5-entry project of its own that it set up
// itself. The two binaries need different versions (go build -ldflags
// -X=github.com/aboxhq/abox/internal/cli.Version=…): the netd image is tagged by version, and a
// binary refuses a netd image built from another. It is skipped without $ABOX_BENCH_BASE;
// bench/run does not run it.
func TestCompare(t *testing.T) {
	base := os.Getenv("ABOX_BENCH_BASE")
	if base == "" {
		t.Skip("set ABOX_BENCH_BASE to an abox binary to compare with")
	}
	w := newBareWorld(t)
	old := w.addProject(t, "bench-base", w.secondWorkspace(t, "base"), smallEntries, base)
	cur := w.addProject(t, "bench-small", w.h.Workspace, smallEntries, harness.AboxBinary(t))
	var runs, baseRuns []runSample
	a, b := alternate(*pairs, func() float64 {
		s := w.runNoop(t, cur)
		runs = append(runs, s)
		return s.wall
	}, func() float64 {
		s := w.runNoop(t, old)
		baseRuns = append(baseRuns, s)
		return s.wall
	})
	f := NewFigure("0-compare", "abox run of a no-op prompt: this abox vs $ABOX_BENCH_BASE", "s",
		NewSeries("this abox", a), NewSeries("base", b), nil)
	tails := func(runs []runSample) Stat {
		var v []float64
		for _, r := range runs[1:] {
			v = append(v, r.wall-r.start()-r.phases["agent run"]-r.phases["agent exit"])
		}
		return Summarize(v)
	}
	f.Parts = []Part{{Name: "this: after the agent's exit (remove, netd stop, harvest, teardown)", Stat: tails(runs)},
		{Name: "base: after the agent's exit (remove, netd stop, harvest, teardown)", Stat: tails(baseRuns)}}
	for _, p := range phaseParts(runs[1:], phaseOrder(t, w, cur)) {
		f.Parts = append(f.Parts, Part{Name: "this: " + p.Name, Stat: p.Stat})
	}
	for _, p := range phaseParts(baseRuns[1:], phaseOrder(t, w, old)) {
		f.Parts = append(f.Parts, Part{Name: "base: " + p.Name, Stat: p.Stat})
	}
	f.Command = "ABOX_BENCH_BASE=<abox binary> bench/run -run TestCompare"
	w.write(t, f)
}
