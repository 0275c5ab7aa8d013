package testjson

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Outcome is how a test or a package ended.
type Outcome string

// The outcomes `go test -json` reports. A test that started but never ended (its binary died
// or timed out) has the empty outcome.
const (
	Pass Outcome = "pass"
	Fail Outcome = "fail"
	Skip Outcome = "skip"
)

// Test is one test, subtest or fuzz target's run over its seed corpus.
type Test struct {
	Package string   // import path
	Name    string   // as go test names it: TestX, TestX/some_case
	Outcome Outcome  // "" if it never ended
	Output  []string // what it printed, line by line, framing lines included
}

// Package is one test binary's run, or a package that had no test to run.
type Package struct {
	Path        string
	Outcome     Outcome // pass, fail, or skip for a package without test files
	BuildFailed bool
	Output      []string // lines no test printed: the result line, TestMain's output
}

// Run is what one or more `go test -json` streams report, in the order they report it.
type Run struct {
	tests    map[testKey]*Test
	order    []testKey
	packages map[string]*Package
	pkgOrder []string
	build    map[string][]string // import path as the compiler names it → its build output
}

type testKey struct{ pkg, name string }

// event is one line of `go test -json` (cmd/test2json's TestEvent, and the build events of
// go1.24 and later).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output, build-fail
	FailedBuild string
}

// NewRun returns an empty [Run] to feed with [Run.Add].
func NewRun() *Run {
	return &Run{tests: map[testKey]*Test{}, packages: map[string]*Package{}, build: map[string][]string{}}
}

// Read reads a whole `go test -json` stream. Every line must be an event: a stream with
// anything else in it is not one a check can trust.
func Read(r io.Reader) (*Run, error) {
	run := NewRun()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		if err := run.Add(sc.Bytes()); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return run, nil
}

// Add records one line of the stream; blank lines are ignored.
func (r *Run) Add(line []byte) error {
	e, ok, err := decode(line)
	if ok {
		r.add(e)
	}
	return err
}

// decode parses one line of the stream; ok is false for a blank line or an error.
func decode(line []byte) (e event, ok bool, err error) {
	if strings.TrimSpace(string(line)) == "" {
		return e, false, nil
	}
	if err := json.Unmarshal(line, &e); err != nil || (e.Action == "" && e.Package == "" && e.ImportPath == "") {
		return e, false, fmt.Errorf("not a go test -json event: %.60q", line)
	}
	return e, true, nil
}

func (r *Run) add(e event) {
	switch {
	case e.Action == "build-output":
		r.build[e.ImportPath] = append(r.build[e.ImportPath], e.Output)
		return
	case e.Action == "build-fail" || e.Package == "":
		return
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		switch Outcome(e.Action) {
		case Pass, Fail, Skip:
			p.Outcome = Outcome(e.Action)
			p.BuildFailed = p.BuildFailed || e.FailedBuild != ""
		}
		if e.Action == "output" {
			p.Output = append(p.Output, e.Output)
		}
		return
	}
	t := r.test(e.Package, e.Test)
	switch Outcome(e.Action) {
	case Pass, Fail, Skip:
		t.Outcome = Outcome(e.Action)
	}
	if e.Action == "output" {
		t.Output = append(t.Output, e.Output)
	}
}

func (r *Run) pkg(path string) *Package {
	p, ok := r.packages[path]
	if !ok {
		p = &Package{Path: path}
		r.packages[path] = p
		r.pkgOrder = append(r.pkgOrder, path)
	}
	return p
}

func (r *Run) test(pkg, name string) *Test {
	k := testKey{pkg, name}
	t, ok := r.tests[k]
	if !ok {
		t = &Test{Package: pkg, Name: name}
		r.tests[k] = t
		r.order = append(r.order, k)
	}
	return t
}

// Test returns the test of package pkg named name (TestX or TestX/sub) exactly as go test
// named it, or nil if the stream never mentions it.
func (r *Run) Test(pkg, name string) *Test { return r.tests[testKey{pkg, name}] }

// Package returns the package of import path path, or nil if the stream never mentions it.
func (r *Run) Package(path string) *Package { return r.packages[path] }

// Tests returns every test in the order the stream first mentions it.
func (r *Run) Tests() []*Test {
	out := make([]*Test, len(r.order))
	for i, k := range r.order {
		out[i] = r.tests[k]
	}
	return out
}

// Packages returns every package in the order the stream first mentions it.
func (r *Run) Packages() []*Package {
	out := make([]*Package, len(r.pkgOrder))
	for i, p := range r.pkgOrder {
		out[i] = r.packages[p]
	}
	return out
}

// Subtests returns the names of the direct subtests of pkg's test name that the stream
// mentions.
func (r *Run) Subtests(pkg, name string) []string {
	var out []string
	for _, k := range r.order {
		if rest, ok := strings.CutPrefix(k.name, name+"/"); k.pkg == pkg && ok && !strings.Contains(rest, "/") {
			out = append(out, k.name)
		}
	}
	return out
}

// Skipped returns the tests that skipped, in order. A package without test files is not
// among them.
func (r *Run) Skipped() []*Test {
	var out []*Test
	for _, t := range r.Tests() {
		if t.Outcome == Skip {
			out = append(out, t)
		}
	}
	return out
}

// logLine matches the first line of a message a test logged: `    file_test.go:61: text`.
var logLine = regexp.MustCompile(`^\s*([A-Za-z0-9_.-]+\.go:[0-9]+: .*)$`)

// Reason returns the last message t logged, with its continuation lines joined by " / ": for
// a skipped test, why it skipped. It is "" when t logged nothing.
func (t *Test) Reason() string {
	var msg []string
	for _, l := range t.Output {
		l = strings.TrimRight(l, "\n")
		switch {
		case logLine.MatchString(l):
			msg = []string{logLine.FindStringSubmatch(l)[1]}
		case framing(l):
		case len(msg) > 0 && strings.TrimSpace(l) != "":
			msg = append(msg, strings.TrimSpace(l))
		}
	}
	return strings.Join(msg, " / ")
}

// framing reports whether l is a line go test writes around a test's own output.
func framing(l string) bool {
	t := strings.TrimLeft(l, " ")
	return strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- PASS: ") ||
		strings.HasPrefix(t, "--- SKIP: ") || strings.HasPrefix(t, "--- FAIL: ")
}
