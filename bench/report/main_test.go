//go:build bench

package main

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/bench"
)

func TestMarkdownEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"docker run --rm <agent image> true":   "docker run --rm &lt;agent image&gt; true",
		"a | b":                                "a \\| b",
		"`docker run --network <net>` of <it>": "`docker run --network <net>` of &lt;it&gt;",
		"plain":                                "plain",
	} {
		if got := md(in); got != want {
			t.Errorf("md(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReport(t *testing.T) {
	f := bench.NewFigure("1-x", "abox vs <floor>", "s",
		bench.NewSeries("abox", []float64{3, 3, 3}), bench.NewSeries("floor", []float64{1, 1, 1}), &bench.Target{Kind: "ratio<=", Value: 1.5})
	f.Parts = []bench.Part{{Name: "netd start", Stat: bench.Summarize([]float64{0.25})}}
	f.Command = "bench/run -run TestBench/x"
	var b strings.Builder
	write(&b, []*bench.Figure{f})
	out := b.String()
	for _, want := range []string{
		"| **1-x** abox vs &lt;floor&gt; | abox: 3.00 / **3.00** / 3.00 s | floor: 1.00 / **1.00** / 1.00 s | 3.00 / **3.00×** / 3.00 | ≤ 1.50× | **no** |",
		"| netd start | 0.250 / **0.250** / 0.250 s |",
		"Reproduce: `bench/run -run TestBench/x`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
