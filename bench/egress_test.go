//go:build bench && e2e

package bench

import (
	"testing"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
)

// Sizes of the network benches.
const (
	bulkBytes   = 256 << 20 // one bulk transfer
	tlsConns    = 200       // connections per TLS set-up sample
	dnsQueries  = 1000      // sequential queries per DNS latency sample
	dnsQPSConc  = 8         // workers of the DNS throughput sample
	dnsQPSTotal = 4000      // queries of the DNS throughput sample
	mcpOps      = 100       // operations per MCP sample, in one session
)

// side is where a bench mode runs: the sandbox's agent (through netd) or the plain client.
type side struct {
	container string
	args      func(mode ...string) []string
}

// pairResult is what [world.pairBench] measured: pick of each report, warm-ups excluded, and the
// CPU time netd and each side's client spent per operation of each sample.
type pairResult struct {
	a, b       []float64
	ra, rb     []benchResult
	netdCPUOp  []float64 // µs of netd CPU per operation of each sample through netd
	cpuA, cpuB []float64 // µs of the client container's CPU per operation: through netd, direct
}

// pairBench alternates a bench mode in the sandbox and in the client and returns pick of each
// report, with the CPU time spent per operation.
func (w *world) pairBench(t *testing.T, sb *sandbox, in, direct side, mode []string, pick func(benchResult) float64) pairResult {
	t.Helper()
	var p pairResult
	inID, directID := w.containerID(t, in.container), w.containerID(t, direct.container)
	p.a, p.b = alternate(*pairs, func() float64 {
		netd, client := cpuSeconds(sb.netdID), cpuSeconds(inID)
		r := w.benchIn(t, in.container, in.args(mode...)...)
		p.netdCPUOp = append(p.netdCPUOp, (cpuSeconds(sb.netdID)-netd)*1e6/float64(r.N))
		p.cpuA = append(p.cpuA, (cpuSeconds(inID)-client)*1e6/float64(r.N))
		p.ra = append(p.ra, r)
		return pick(r)
	}, func() float64 {
		client := cpuSeconds(directID)
		r := w.benchIn(t, direct.container, direct.args(mode...)...)
		p.cpuB = append(p.cpuB, (cpuSeconds(directID)-client)*1e6/float64(r.N))
		p.rb = append(p.rb, r)
		return pick(r)
	})
	p.ra, p.rb, p.netdCPUOp, p.cpuA, p.cpuB = p.ra[1:], p.rb[1:], p.netdCPUOp[1:], p.cpuA[1:], p.cpuB[1:]
	return p
}

// cpuParts report netd's CPU and the client's per operation (op), scaled by div.
func (p pairResult) cpuParts(op string, div float64) []Part {
	scale := func(v []float64) Stat {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x / div
		}
		return Summarize(out)
	}
	return []Part{
		{Name: "netd CPU per " + op, Stat: scale(p.netdCPUOp), Unit: "µs"},
		{Name: "client CPU per " + op + ", through netd", Stat: scale(p.cpuA), Unit: "µs"},
		{Name: "client CPU per " + op + ", direct", Stat: scale(p.cpuB), Unit: "µs"},
	}
}

// benchEgress: bulk TLS transfer, TLS connection set-up, DNS and MCP through netd (from the
// agent of a running sandbox) against the same from a plain container on the same network, and
// netd's memory over the bulk transfers.
func benchEgress(t *testing.T, w *world) {
	sb := w.startSandbox(t, w.small)
	defer sb.stop(t)
	cl := w.client(t)
	plain := func(mode ...string) []string { return mode }
	agent, client := side{sb.agent, plain}, side{cl, plain}
	// By name, as a client would: the agent's resolver is netd's, which opens the address it
	// answers for the kernel's fast path; the plain container's is Docker's.
	srv443 := srvName + ":443"
	cmd := "bench/run -run TestBench/egress"

	_, idleHWM := w.netdMemory(t, sb.netd)
	w.resetNetdPeak(t, sb.netd)
	p := w.pairBench(t, sb, agent, client, []string{"net", "getbench", srv443, srvName, "/bytes/" + itoa(bulkBytes)},
		func(r benchResult) float64 { return r.MiBS })
	f := NewFigure("3a-throughput", "TLS bulk download ("+mib(bulkBytes)+" from testsrv) through netd's TLS fast path vs direct",
		"MiB/s", NewSeries("through netd", p.a), NewSeries("direct", p.b), &Target{"ratio>=", 0.9})
	f.Parts = p.cpuParts("MiB", bulkBytes>>20)
	f.Command = cmd
	w.write(t, f)
	peak, hwm := w.netdMemory(t, sb.netd)
	mf := NewFigure("7a-mem-netd", "netd's peak memory over the bulk transfers vs netd idle after start", "MiB",
		NewSeries("netd VmHWM after transfers", []float64{hwm}), NewSeries("netd VmHWM idle", []float64{idleHWM}), nil)
	mf.Parts = []Part{{Name: "netd cgroup memory.max_usage_in_bytes during the transfers (incl. page cache)",
		Stat: Summarize([]float64{peak})}}
	mf.Command = cmd
	mf.Note("VmHWM summed over netd's processes (supervisor and serving child)")
	w.write(t, mf)

	p = w.pairBench(t, sb, agent, client, []string{"net", "tlsbench", srv443, srvName, itoa(tlsConns)}, benchResult.medianMS)
	f = NewFigure("3b-tls-setup", "TLS connection set-up (connect + full handshake), median of "+itoa(tlsConns)+
		" per sample, through netd vs direct", "ms", NewSeries("through netd", p.a), NewSeries("direct", p.b), &Target{"diff<=", 1})
	f.Parts = p.cpuParts("connection", 1)
	f.Command = cmd
	w.write(t, f)

	benchDNS(t, w, sb, cl)
	benchMCP(t, w, sb, cl)
}

// benchDNS: the agent asks 127.0.0.1:53 (every uid's port 53 goes to netd, which forwards an
// allowed name to Docker's resolver); the client asks Docker's resolver itself. Both ask for
// testsrv's alias, which Docker's resolver answers.
func benchDNS(t *testing.T, w *world, sb *sandbox, cl string) {
	in := side{sb.agent, func(m ...string) []string { return append([]string{"net", "dnsbench", "127.0.0.1:53"}, m...) }}
	direct := side{cl, func(m ...string) []string { return append([]string{"net", "dnsbench", policy.UpstreamDNS}, m...) }}
	p := w.pairBench(t, sb, in, direct, []string{srvName, itoa(dnsQueries)}, benchResult.medianMS)
	f := NewFigure("4a-dns-latency", "DNS A query latency, median of "+itoa(dnsQueries)+" sequential per sample, through netd vs Docker's resolver",
		"ms", NewSeries("through netd", p.a), NewSeries("127.0.0.11 direct", p.b), nil)
	f.Parts = p.cpuParts("query", 1)
	f.Command = "bench/run -run TestBench/egress"
	w.write(t, f)
	p = w.pairBench(t, sb, in, direct, []string{srvName, itoa(dnsQPSTotal), itoa(dnsQPSConc)},
		func(r benchResult) float64 { return r.PerS })
	f = NewFigure("4b-dns-qps", "DNS queries per second with "+itoa(dnsQPSConc)+" concurrent clients, through netd vs Docker's resolver",
		"q/s", NewSeries("through netd", p.a), NewSeries("127.0.0.11 direct", p.b), nil)
	var latA, latB []float64
	for i := range p.ra {
		latA, latB = append(latA, p.ra[i].medianMS()), append(latB, p.rb[i].medianMS())
	}
	f.Parts = append(p.cpuParts("query", 1), Part{Name: "median latency through netd", Stat: Summarize(latA), Unit: "ms"},
		Part{Name: "median latency direct", Stat: Summarize(latB), Unit: "ms"})
	f.Command = "bench/run -run TestBench/egress"
	w.write(t, f)
}

// benchMCP: tools/list and a small tools/call in one session, through netd's forwarder (the
// agent's own mcp.json, no token) vs straight to the gateway stand-in with its token.
func benchMCP(t *testing.T, w *world, sb *sandbox, cl string) {
	direct := mcpConfig(gateway.URL(w.h.Profile, 8811), w.token)
	in := side{sb.agent, func(m ...string) []string { return append([]string{"mcp-call", "--repeat", itoa(mcpOps)}, m...) }}
	out := side{cl, func(m ...string) []string {
		return append([]string{"mcp-call", "--mcp-config", direct, "--repeat", itoa(mcpOps)}, m...)
	}}
	for _, c := range []struct {
		id, title string
		mode      []string
	}{
		{"5a-mcp-list", "MCP tools/list", []string{"list"}},
		{"5b-mcp-call", "MCP tools/call echo (small)", []string{"call", "echo", `{"text":"bench"}`}},
	} {
		p := w.pairBench(t, sb, in, out, c.mode, benchResult.medianMS)
		var connA, connB []float64
		for i := range p.ra {
			connA = append(connA, float64(p.ra[i].ConnectUS)/1000)
			connB = append(connB, float64(p.rb[i].ConnectUS)/1000)
		}
		f := NewFigure(c.id, c.title+", median of "+itoa(mcpOps)+" in one session per sample, through netd vs direct with the token",
			"ms", NewSeries("through netd", p.a), NewSeries("direct", p.b), nil)
		f.Parts = append(p.cpuParts("operation (the session's set-up included)", 1),
			Part{Name: "session set-up (initialize) through netd", Stat: Summarize(connA)},
			Part{Name: "session set-up (initialize) direct", Stat: Summarize(connB)})
		f.Command = "bench/run -run TestBench/egress"
		w.write(t, f)
	}
	benchSpawnedMCP(t, w, sb, in, out)
}

// benchSpawnedMCP: calls of a server the gateway runs in a container (the chatty one, which
// announces changed tools at start as server-everything does), in one session: the first call
// starts the session's container, the later ones use it. Through netd vs direct with the token.
func benchSpawnedMCP(t *testing.T, w *world, sb *sandbox, in, out side) {
	later := func(r benchResult) float64 {
		r.LatUS = r.LatUS[1:]
		return r.medianMS()
	}
	p := w.pairBench(t, sb, in, out, []string{"call", "env", `{"name":"HOME"}`}, later)
	var firstA, firstB []float64
	for i := range p.ra {
		firstA = append(firstA, float64(p.ra[i].LatUS[0])/1000)
		firstB = append(firstB, float64(p.rb[i].LatUS[0])/1000)
	}
	f := NewFigure("5c-mcp-call-spawned", "MCP tools/call of a server in a container of its own that announces changed tools at start, "+
		"median of the "+itoa(mcpOps-1)+" calls after the first of a session, through netd vs direct with the token",
		"ms", NewSeries("through netd", p.a), NewSeries("direct", p.b), nil)
	f.Parts = append(p.cpuParts("call (the first included)", 1),
		Part{Name: "first call of the session (its container started) through netd", Stat: Summarize(firstA), Unit: "ms"},
		Part{Name: "first call of the session (its container started) direct", Stat: Summarize(firstB), Unit: "ms"})
	f.Command = "bench/run -run TestBench/egress"
	w.write(t, f)
}
