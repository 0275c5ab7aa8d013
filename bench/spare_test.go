//go:build bench && e2e

package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
)

// benchSpare: `abox run` of a no-op prompt as abox runs it by default, on the spare netd the run
// before left started (defaults.spare_netd), against `docker run --rm <agent image> true`. Each
// sample, of either side, begins once the spare of the run before is recorded (which the
// after-run process does after it removed that run's netd), so no side shares the machine with
// a spare's start-up or a netd's removal.
func benchSpare(t *testing.T, w *world) {
	w.h.WriteConfig(harness.SpareNetd(w.h.DefaultConfig()))
	p := w.small
	record := filepath.Join(w.stateDir(p), "spare-netd.json")
	defer func() {
		w.h.WriteConfig(w.h.DefaultConfig())
		if b, err := os.ReadFile(waitFor(t, record)); err == nil {
			var rec struct{ Netd string }
			if json.Unmarshal(b, &rec) == nil && rec.Netd != "" {
				w.docker(t, "rm", "-f", rec.Netd)
			}
		}
		os.Remove(record)
	}()
	mustOK(t, "abox run", w.abox(t, p, "run", noopPrompt)) // leaves the first spare
	var runs []runSample
	wait := func() { waitFor(t, record) }
	s := rotate(*pairs, func() float64 {
		wait()
		r := w.runNoop(t, p)
		runs = append(runs, r)
		return r.wall
	}, func() float64 {
		wait()
		return mustOK(t, "docker run", w.docker(t, "run", "--rm", p.spec.Agent.Image, "true")).Wall.Seconds()
	})
	runs = runs[1:]
	f := NewFigure("1-run-overhead", "abox run of a no-op prompt (on the spare netd the run before left, abox's default) vs docker run --rm <agent image> true", "s",
		NewSeries("abox run", s[0]), NewSeries("docker run --rm", s[1]), &Target{"ratio<=", 1.5})
	f.Parts = phaseParts(runs, phaseOrder(t, w, p))
	f.Command = "bench/run -run TestBench/spare"
	f.Note("each sample of either side starts once the spare of the run before is recorded; what the " +
		"after-run process does once a run has returned (the run's finished netd removed, the next spare " +
		"started) is in neither side's time")
	w.write(t, f)
}

// waitFor waits up to a minute for file to exist and returns it.
func waitFor(t *testing.T, file string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			return file
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within a minute", file)
		}
	}
}
