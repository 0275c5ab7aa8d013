//go:build bench && e2e

package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchSpare: `abox run` of a no-op prompt with defaults.spare_netd (the run takes the netd the
// run before left started) against `docker run --rm <agent image> true`. Each sample, of either
// side, begins once the spare of the run before is recorded, so no side shares the machine with
// a spare's start-up.
func benchSpare(t *testing.T, w *world) {
	c := w.h.DefaultConfig()
	defaults := map[string]any{"spare_netd": true}
	if d, ok := c.Extra["defaults"].(map[string]string); ok {
		for k, v := range d {
			defaults[k] = v
		}
	}
	c.Extra["defaults"] = defaults
	w.h.WriteConfig(c)
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
	f := NewFigure("1c-run-overhead-spare", "abox run of a no-op prompt on a spare netd (defaults.spare_netd) vs docker run --rm <agent image> true", "s",
		NewSeries("abox run, spare netd", s[0]), NewSeries("docker run --rm", s[1]), &Target{"ratio<=", 1.5})
	f.Parts = phaseParts(runs, phaseOrder(t, w, p))
	f.Command = "bench/run -run TestBench/spare"
	f.Note("each sample of either side starts once the spare of the run before is recorded; the spare's " +
		"start-up (after the run has ended, in the background) is not in either side's time")
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
