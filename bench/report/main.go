//go:build bench

// Command report prints the figures bench/run stored as a Markdown report: one summary table,
// then each figure's parts (such as the phases of a run) and notes.
//
//	go run -tags bench ./bench/report DIR
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aboxhq/abox/bench"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: report DIR")
		os.Exit(2)
	}
	figs, err := bench.ReadFigures(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	write(os.Stdout, figs)
}

func write(w io.Writer, figs []*bench.Figure) {
	fmt.Fprintln(w, "| figure | abox (min / median / max) | baseline (min / median / max) | ratio abox÷baseline | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, f := range figs {
		fmt.Fprintf(w, "| **%s** %s | %s: %s %s | %s: %s %s | %s | %s | %s |\n",
			f.ID, md(f.Title), md(f.A.Label), stat(f.A.Stat), f.Unit, md(f.B.Label), stat(f.B.Stat), f.Unit,
			ratio(f), target(f), met(f))
	}
	for _, f := range figs {
		if len(f.Parts) == 0 && len(f.Notes) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n#### %s\n\n", f.ID)
		if len(f.Parts) > 0 {
			fmt.Fprintf(w, "| part | min / median / max |\n|---|---|\n")
			for _, p := range f.Parts {
				fmt.Fprintf(w, "| %s | %s %s |\n", md(p.Name), stat(p.Stat), cmp.Or(p.Unit, f.Unit))
			}
		}
		for _, n := range f.Notes {
			fmt.Fprintf(w, "\n%s\n", md(n))
		}
		fmt.Fprintf(w, "\nReproduce: `%s`\n", f.Command)
	}
}

// md escapes, outside `code spans`, what Markdown would read as HTML or as a table cell's end,
// such as the "<agent image>" of a title. Inside a code span the text shows as written.
func md(s string) string {
	esc := strings.NewReplacer("<", "&lt;", ">", "&gt;", "|", "\\|")
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = esc.Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

// stat prints min / median / max with three significant digits.
func stat(s bench.Stat) string {
	return fmt.Sprintf("%s / **%s** / %s", num(s.Min), num(s.Median), num(s.Max))
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1 || v <= -1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// ratio prints the per-pair ratio, and the per-pair difference for a target on it.
func ratio(f *bench.Figure) string {
	s := fmt.Sprintf("%s / **%s×** / %s", num(f.Ratio.Min), num(f.Ratio.Median), num(f.Ratio.Max))
	if f.Target != nil && strings.HasPrefix(f.Target.Kind, "diff") {
		s += fmt.Sprintf("; diff %s / **%+.3g %s** / %s", num(f.Diff.Min), f.Diff.Median, f.Unit, num(f.Diff.Max))
	}
	return s
}

func target(f *bench.Figure) string {
	if f.Target == nil {
		return "—"
	}
	s := f.Target.String()
	if strings.HasPrefix(f.Target.Kind, "diff") {
		s += " " + f.Unit
	}
	return s
}

func met(f *bench.Figure) string {
	switch {
	case f.Met == nil:
		return "—"
	case *f.Met:
		return "yes"
	}
	return "**no**"
}
