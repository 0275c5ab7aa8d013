//go:build bench && e2e

package bench

import "testing"

// benchRuntime: the agent under gVisor (run.runtime: runsc, registered by e2e/setup.sh with
// --network=host) against the agent under runc, in two projects that differ only in that key:
// the no-op run (gVisor's start and the runtime canary are the difference) and the TLS bulk
// download through netd's SNI proxy (gVisor's system-call path is the difference; netd is on
// runc in both).
func benchRuntime(t *testing.T, w *world) {
	gv := w.addProjectWith(t, "bench-runsc", w.secondWorkspace(t, "runsc"), smallEntries, w.small.bin, "run:\n  runtime: runsc\n")
	cmd := "bench/run -run TestBench/runtime"
	var runs []runSample
	a, b := alternate(*pairs, func() float64 {
		s := w.runNoop(t, gv)
		runs = append(runs, s)
		return s.wall
	}, func() float64 { return w.runNoop(t, w.small).wall })
	runs = runs[1:]
	f := NewFigure("8a-runsc-run", "abox run of a no-op prompt with the agent under runsc (gVisor) vs under runc", "s",
		NewSeries("agent under runsc", a), NewSeries("agent under runc", b), nil)
	f.Parts = phaseParts(runs, phaseOrder(t, w, gv))
	f.Command = cmd
	f.Note("the parts are the runsc runs'; runtime canary is the container that checks, before the agent starts, that gVisor's packets cross netd's ruleset")
	w.write(t, f)

	sg := w.startSandbox(t, gv)
	defer sg.stop(t)
	sc := w.startSandbox(t, w.small)
	defer sc.stop(t)
	plain := func(mode ...string) []string { return mode }
	srv443 := w.srv.IP + ":443"
	p := w.pairBench(t, sg, side{sg.agent, plain}, side{sc.agent, plain},
		[]string{"net", "getbench", srv443, srvName, "/bytes/" + itoa(bulkBytes)}, func(r benchResult) float64 { return r.MiBS })
	f = NewFigure("8b-runsc-throughput", "TLS bulk download ("+mib(bulkBytes)+" from testsrv) through netd's SNI proxy, agent under runsc vs under runc",
		"MiB/s", NewSeries("agent under runsc", p.a), NewSeries("agent under runc", p.b), nil)
	scale := func(v []float64) Stat {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x / float64(bulkBytes>>20)
		}
		return Summarize(out)
	}
	f.Parts = []Part{
		{Name: "netd CPU per MiB (runsc sandbox)", Stat: scale(p.netdCPUOp), Unit: "µs"},
		{Name: "agent container CPU per MiB, under runsc (gVisor's Sentry included)", Stat: scale(p.cpuA), Unit: "µs"},
		{Name: "agent container CPU per MiB, under runc", Stat: scale(p.cpuB), Unit: "µs"},
	}
	f.Command = cmd
	w.write(t, f)
}
