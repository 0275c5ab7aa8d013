//go:build bench

// Package bench measures abox's overhead against the floor, side by side: each figure compares
// what abox does (a run, a connection through netd, a DNS query, an MCP call) with the same
// thing done without abox on the same machine, in the same run.
//
// A single timing on a shared two-core machine says little; a ratio of two timings taken in
// turn says a lot. So every figure alternates its two sides (A B A B …, after one discarded
// warm-up of each), pairs the samples, and reports min / median / max of each side and of the
// per-pair ratio; targets are checked on the median ratio. BENCHMARKS.md holds the figures and
// what each ratio means; bench/run reproduces them.
//
// The benchmarks are Go tests behind the build tags bench and e2e (they drive the real daemon
// through e2e/harness, whose Setup takes a testing.TB), so `go test ./...` never runs them:
//
//	bench/run                                 every figure, report in bench/out/<time>
//	go test -tags 'bench e2e' -run TestBench/egress ./bench/ -args -pairs 3
//
// Figures that need many operations inside one process use the stand-in claude's bench modes
// (`claude net dnsbench|tlsbench|getbench`, `claude mcp-call --repeat`), exec'd both in a running
// sandbox's agent (through netd) and in a plain client container on the same network (directly).
// This package holds the figure type and its summaries; the report command renders them.
package bench
