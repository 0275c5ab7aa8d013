//go:build bench && e2e

package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// noopPrompt is the stand-in agent's whole job in the run benches: a bash script that does
// nothing.
const noopPrompt = "true"

// runSample is one timed `abox run` of the no-op prompt.
type runSample struct {
	wall   float64            // seconds, as the caller sees it
	phases map[string]float64 // seconds, from the run's phases.json
	m      measured
}

var runIDLine = regexp.MustCompile(`(?m)^run ([0-9a-f]{8}) ·`)

// runNoop runs the no-op prompt in p and reads the run's phases. It returns once the after-run
// process has removed the run's netd, so that no sample shares the machine with that removal.
func (w *world) runNoop(t *testing.T, p *project) runSample {
	t.Helper()
	m := mustOK(t, "abox run", w.abox(t, p, "run", noopPrompt))
	w.h.WaitAfterRun()
	s := runSample{wall: m.Wall.Seconds(), m: m, phases: map[string]float64{}}
	id := runIDLine.FindStringSubmatch(m.Stderr)
	if id == nil {
		t.Fatalf("no run id in abox run's summary:\n%s", m.Stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(w.stateDir(p), "runs", "*-"+id[1]))
	if len(dirs) != 1 {
		t.Fatalf("run directory of %s: found %v", id[1], dirs)
	}
	data, err := os.ReadFile(filepath.Join(dirs[0], "phases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var phases []struct {
		Name string        `json:"name"`
		Dur  time.Duration `json:"dur_ns"`
	}
	if err := json.Unmarshal(data, &phases); err != nil {
		t.Fatal(err)
	}
	inside := 0.0
	for _, ph := range phases {
		s.phases[ph.Name] += ph.Dur.Seconds()
		inside += ph.Dur.Seconds()
	}
	s.phases[outsidePhase] = s.wall - inside
	return s
}

// start is the sandbox's start as the user waits for it: from abox's exec to the agent's first
// output (the CLI's part also holds the recording after teardown, a few milliseconds).
func (s runSample) start() float64 {
	v := s.phases[outsidePhase]
	for _, name := range []string{"prepare", "netd start", "netd ready", "policy verify", "agent create", "agent start"} {
		v += s.phases[name]
	}
	return v
}

// outsidePhase is the part of a run's wall time outside the sandbox's own phases: the CLI's
// start, loading and preflight checks before netd starts, and recording after teardown.
const outsidePhase = "cli (start, preflight, record)"

// phaseParts summarises each phase over samples, in the given order.
func phaseParts(samples []runSample, order []string) []Part {
	var parts []Part
	for _, name := range order {
		var v []float64
		for _, s := range samples {
			v = append(v, s.phases[name])
		}
		parts = append(parts, Part{Name: name, Stat: Summarize(v)})
	}
	return parts
}

// phaseOrder lists the phases of a sample in a stable order: the CLI's part first, then the
// sandbox's as recorded.
func phaseOrder(t *testing.T, w *world, p *project) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(w.stateDir(p), "runs", "*", "phases.json"))
	if len(dirs) == 0 {
		return []string{outsidePhase}
	}
	data, _ := os.ReadFile(dirs[len(dirs)-1])
	var phases []struct{ Name string }
	json.Unmarshal(data, &phases)
	order := []string{outsidePhase}
	for _, ph := range phases {
		order = append(order, ph.Name)
	}
	return order
}

// benchRunOverhead: `abox run` of a no-op prompt that starts its own netd (the world's projects
// set defaults.spare_netd: false: the first run of a project, or one after its policy changed,
// is this run) against `docker run --rm <agent image> true`, with the run broken into its
// phases, and against the docker work any two-container sandbox needs; and the memory of the
// abox process against the docker CLI's. The run of abox's default, on a spare netd, is
// benchSpare's.
func benchRunOverhead(t *testing.T, w *world) {
	var runs []runSample
	var dockerRuns []measured
	s := rotate(*pairs, func() float64 {
		s := w.runNoop(t, w.small)
		runs = append(runs, s)
		return s.wall
	}, func() float64 {
		m := mustOK(t, "docker run", w.docker(t, "run", "--rm", w.small.spec.Agent.Image, "true"))
		dockerRuns = append(dockerRuns, m)
		return m.Wall.Seconds()
	}, func() float64 { return w.twoContainerFloor(t, w.small) },
		func() float64 {
			return mustOK(t, "docker version", w.docker(t, "version", "--format", "{{.Server.Version}}")).Wall.Seconds()
		})
	runs, dockerRuns = runs[1:], dockerRuns[1:] // the warm-ups
	f := NewFigure("1c-run-overhead-cold", "abox run of a no-op prompt that starts its own netd (no spare) vs docker run --rm <agent image> true", "s",
		NewSeries("abox run, own netd", s[0]), NewSeries("docker run --rm", s[1]), nil)
	f.Parts = phaseParts(runs, phaseOrder(t, w, w.small))
	verbose := mustOK(t, "abox --verbose run", w.abox(t, w.small, "--verbose", "run", noopPrompt))
	calls := 0.0
	for _, l := range strings.Split(verbose.Stderr, "\n") {
		if strings.HasPrefix(l, "+ ") && strings.Contains(l, "docker ") { // "+ [ENV=v …] docker <argv>"
			calls++
		}
	}
	f.Parts = append(f.Parts,
		Part{Name: "docker CLI calls per abox run (from --verbose)", Stat: Summarize([]float64{calls}), Unit: "calls"},
		Part{Name: "one docker CLI call (docker version)", Stat: Summarize(s[3]), Unit: "s"})
	f.Command = "bench/run -run TestBench/run-overhead"
	w.write(t, f)
	ff := NewFigure("1b-two-container-floor", "abox run of a no-op prompt that starts its own netd vs the docker calls any netd + agent sandbox makes", "s",
		NewSeries("abox run, own netd", s[0]), NewSeries("two-container floor", s[2]), nil)
	ff.Command = f.Command
	ff.Note("the floor: `docker run -d --init --network <net>` of a sleeping container from the netd image, " +
		"`docker create --network container:<it>` of the agent image running `true`, `docker start --attach`, " +
		"`docker rm -f` of the agent, `docker stop`, `docker cp` of one file and `docker rm -f` of the first; " +
		"no preflight, no policy, no harvest to read")
	w.write(t, ff)

	var hwm, rss, drss []float64
	for i := range runs {
		hwm = append(hwm, float64(runs[i].m.HWMKiB)/1024)
		rss = append(rss, float64(runs[i].m.MaxRSSKiB)/1024)
		drss = append(drss, float64(dockerRuns[i].MaxRSSKiB)/1024)
	}
	mf := NewFigure("7b-mem-abox", "peak RSS of the abox run process vs the docker run CLI", "MiB",
		NewSeries("abox run (VmHWM)", hwm), NewSeries("docker run CLI (maxrss)", drss), nil)
	mf.Parts = []Part{{Name: "abox run and its docker CLI children (getrusage maxrss)", Stat: Summarize(rss)}}
	mf.Command = f.Command
	w.write(t, mf)
}

// twoContainerFloor makes the docker calls of a sandbox of two containers, the second in the
// first's network namespace, with nothing of abox's around them, and returns their wall time.
func (w *world) twoContainerFloor(t *testing.T, p *project) float64 {
	t.Helper()
	first, second := "abox-bench-floor-"+w.h.ID, "abox-bench-floor-agent-"+w.h.ID
	var labels []string
	for k, v := range w.h.Labels() {
		labels = append(labels, "--label", k+"="+v)
	}
	start := time.Now()
	steps := [][]string{
		append(append([]string{"run", "-d", "--init", "--name", first, "--network", w.h.Network}, labels...),
			"--entrypoint", "/bin/sleep", p.spec.Netd.Image, "3600"),
		append(append([]string{"create", "--name", second, "--network", "container:" + first}, labels...),
			p.spec.Agent.Image, "true"),
		{"start", "--attach", second},
		{"rm", "-f", second},
		{"stop", "-t", "5", first},
		{"cp", first + ":/etc/hostname", "-"},
		{"rm", "-f", "-v", first},
	}
	for _, s := range steps {
		mustOK(t, "docker "+s[0], w.docker(t, s...))
	}
	return time.Since(start).Seconds()
}

// benchAllowlist: the start of the same no-op run in two projects that differ only in allowlist
// size, and what resolving every entry at start would add.
func benchAllowlist(t *testing.T, w *world) {
	client := w.client(t)
	var big, small []runSample
	var resolve []float64
	a, b := alternate(*pairs, func() float64 {
		s := w.runNoop(t, w.big)
		big = append(big, s)
		return s.start()
	}, func() float64 {
		s := w.runNoop(t, w.small)
		small = append(small, s)
		// Between pairs, what a design that resolves up front would add: every big entry looked
		// up once, in sequence, at a DNS server on the same network that answers any name.
		rep := w.benchIn(t, client, "net", "dnsbench", w.srv.IP+":53", "h%d.bench.test", itoa(bigEntries))
		resolve = append(resolve, rep.TotalS)
		return s.start()
	})
	big, small, resolve = big[1:], small[1:], resolve[1:]
	f := NewFigure("2-allowlist", "sandbox start (abox run until the agent's first output): 500 allowlist entries vs 5", "s",
		NewSeries("500 entries", a), NewSeries("5 entries", b), &Target{"ratio<=", 1.05})
	wall := func(runs []runSample) Stat {
		var v []float64
		for _, r := range runs {
			v = append(v, r.wall)
		}
		return Summarize(v)
	}
	f.Parts = []Part{{Name: "500: whole run", Stat: wall(big)}, {Name: "5: whole run", Stat: wall(small)}}
	order := phaseOrder(t, w, w.big)
	order = order[:slices.Index(order, "agent start")+1]
	for i, p := range phaseParts(big, order) {
		f.Parts = append(f.Parts, Part{Name: "500: " + p.Name, Stat: p.Stat},
			Part{Name: "5: " + p.Name, Stat: phaseParts(small, order)[i].Stat})
	}
	f.Command = "bench/run -run TestBench/allowlist"
	w.write(t, f)

	var upfront []float64
	for i, s := range big {
		upfront = append(upfront, s.start()+resolve[i])
	}
	rf := NewFigure("2b-resolve-up-front", "500-entry sandbox start if it resolved every entry first vs as built", "s",
		NewSeries("start + 500 lookups", upfront), NewSeries("start as built", a), nil)
	rf.Parts = []Part{{Name: "500 sequential A lookups (testsrv DNS, same network)", Stat: Summarize(resolve)}}
	rf.Command = f.Command
	rf.Note("a lower bound: real names go through Docker's resolver to the internet, often 10–100 ms each")
	w.write(t, rf)
}
