package testjson

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Print copies a `go test -json` stream from in to w as `go test` without -json or -v would
// show it, one package at a time as each ends: the result line of a package that passed, and
// everything a failed package printed except the output of its tests that passed or skipped.
// Build errors are shown as they come; a line that is not an event is copied as it is. It
// returns what the stream reported, and an error only when in could not be read.
func Print(w io.Writer, in io.Reader) (*Run, error) {
	run := NewRun()
	pending := map[string][]event{} // package → its events until it ends
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		e, ok, err := decode(sc.Bytes())
		if err != nil {
			fmt.Fprintf(w, "%s\n", sc.Bytes())
		}
		if !ok {
			continue
		}
		run.add(e)
		if e.Action == "build-output" {
			fmt.Fprint(w, e.Output)
			continue
		}
		if e.Package == "" {
			continue
		}
		pending[e.Package] = append(pending[e.Package], e)
		if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			printPackage(w, run, pending[e.Package])
			delete(pending, e.Package)
		}
	}
	for _, p := range run.pkgOrder { // packages the stream never ended: show what they said
		if evs, ok := pending[p]; ok {
			printPackage(w, run, evs)
		}
	}
	return run, sc.Err()
}

// printPackage prints one ended (or abandoned) package's events: for a package that passed,
// its result line; otherwise all it printed but the tests that passed or skipped.
func printPackage(w io.Writer, run *Run, evs []event) {
	failed := run.Package(evs[0].Package).Outcome == Fail || run.Package(evs[0].Package).Outcome == ""
	for _, e := range evs {
		if e.Action != "output" || !failed && !resultLine(e.Output) {
			continue
		}
		if e.Test != "" {
			if t := run.Test(e.Package, e.Test); t.Outcome == Pass || t.Outcome == Skip {
				continue
			}
			if l := strings.TrimRight(e.Output, "\n"); framing(l) && !strings.Contains(l, "--- FAIL: ") {
				continue
			}
		}
		fmt.Fprint(w, e.Output)
	}
}

// resultLine reports whether l is the line go test ends a passing package with.
func resultLine(l string) bool {
	return strings.HasPrefix(l, "ok  \t") || strings.HasPrefix(l, "?   \t")
}
