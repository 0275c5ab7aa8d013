// Command testgate is the part of CI (.ci/run) that reads what the test suites did rather than
// trusting their exit status. Each suite runs as `go test -json`, recorded to a file:
//
//	go test -json ./... | tee .ci/out/hermetic.json | testgate print
//	testgate check [-partial] [-md SECURITY.md] [-allow .ci/allowed-skips] hermetic=.ci/out/hermetic.json e2e=.ci/out/e2e.json
//
// print shows the stream as plain `go test` would, and exits 1 when a package failed. check
// prints the skipped tests of each suite by package, and fails (exit 1) on a skip that the
// allow-list does not name, and on a test SECURITY.md cites that did not run and pass in the
// suites (internal/securitymd). With -partial a later suite is still to come, so only what
// failed or skipped so far counts. Exit 2 is bad usage or an unreadable file.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/securitymd"
	"github.com/aboxhq/abox/internal/testjson"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// usageError is bad usage or input that could not be read: exit 2.
type usageError struct{ msg, hint string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var err error
	failed := false
	switch first(args) {
	case "print":
		var r *testjson.Run
		r, err = testjson.Print(stdout, stdin)
		if err != nil {
			err = usageError{"reading go test -json: " + err.Error(), "pipe the stdout of go test -json into testgate print"}
		}
		failed = err == nil && anyFailed(r)
	case "check":
		failed, err = check(args[1:], stdout, stderr)
	default:
		err = usageError{fmt.Sprintf("unknown command %q", first(args)), "use `testgate print` or `testgate check NAME=FILE…`"}
	}
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "error: %s\n  ↳ %s\n", ue.msg, ue.hint)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	case failed:
		return 1
	}
	return 0
}

func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// anyFailed reports whether a package of r failed or never ended.
func anyFailed(r *testjson.Run) bool {
	for _, p := range r.Packages() {
		if p.Outcome == testjson.Fail || p.Outcome == "" {
			return true
		}
	}
	return false
}

// check runs `testgate check`; failed is true when it printed an error.
func check(args []string, stdout, stderr io.Writer) (failed bool, err error) {
	fs := flag.NewFlagSet("testgate check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	md := fs.String("md", "SECURITY.md", "the `file` whose cited tests must have run and passed")
	allowFile := fs.String("allow", ".ci/allowed-skips", "the allow-list of tests that may skip (`file`)")
	partial := fs.Bool("partial", false, "more suites are to come: a cited test not run yet is not an error")
	if err := fs.Parse(args); err != nil {
		return false, usageError{err.Error(), "testgate check [-partial] [-md FILE] [-allow FILE] NAME=FILE…"}
	}
	if fs.NArg() == 0 {
		return false, usageError{"no suite to check", "name each go test -json record as NAME=FILE"}
	}
	module, err := modulePath("go.mod")
	if err != nil {
		return false, err
	}
	suites, err := readSuites(fs.Args())
	if err != nil {
		return false, err
	}
	allowed, err := readAllowlist(*allowFile)
	if err != nil {
		return false, err
	}
	doc, err := os.ReadFile(*md)
	if err != nil {
		return false, usageError{err.Error(), "run testgate from the repository's root"}
	}
	summarizeSkips(stdout, module, suites)
	cits := securitymd.Citations(string(doc))
	problems := checkSkips(module, suites, cits, allowed, *allowFile)
	for _, p := range securitymd.CheckRan(cits, module, suites, *partial) {
		problems = append(problems, problem{p.Message, p.Hint})
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "error: %s\n  ↳ %s\n", p.msg, p.hint)
	}
	if len(problems) > 0 {
		noun := "problems"
		if len(problems) == 1 {
			noun = "problem"
		}
		fmt.Fprintf(stderr, "testgate: %d %s in %s\n", len(problems), noun, suiteNames(suites))
		return true, nil
	}
	what := "ran and passed"
	if *partial {
		what = "did not fail or skip so far"
	}
	fmt.Fprintf(stdout, "%s: the %d tests it cites %s (%s)\n", *md, distinct(cits), what, suiteNames(suites))
	return false, nil
}

// problem is one error line and its hint.
type problem struct{ msg, hint string }

// readSuites reads each NAME=FILE argument.
func readSuites(args []string) ([]securitymd.Suite, error) {
	var suites []securitymd.Suite
	for _, a := range args {
		name, file, ok := strings.Cut(a, "=")
		if !ok || name == "" || file == "" {
			return nil, usageError{fmt.Sprintf("suite %q is not NAME=FILE", a), "for example e2e=.ci/out/e2e.json"}
		}
		f, err := os.Open(file)
		if err != nil {
			return nil, usageError{err.Error(), "record the suite with go test -json first"}
		}
		r, err := testjson.Read(f)
		f.Close()
		if err != nil {
			return nil, usageError{fmt.Sprintf("%s: %v", file, err), "the file must hold only the stdout of go test -json"}
		}
		suites = append(suites, securitymd.Suite{Name: name, Run: r})
	}
	return suites, nil
}

func suiteNames(suites []securitymd.Suite) string {
	var names []string
	for _, s := range suites {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

func distinct(cits []securitymd.Citation) int {
	seen := map[string]bool{}
	for _, c := range cits {
		seen[c.Ref] = true
	}
	return len(seen)
}

// modulePath reads the module path from go.mod.
func modulePath(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", usageError{err.Error(), "run testgate from the repository's root"}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", usageError{file + " has no module line", "run testgate from the repository's root"}
}

// ref names a test as SECURITY.md and the allow-list do: <dir>.<TestName>[/<subtest>].
func ref(module string, t *testjson.Test) string {
	dir := strings.TrimPrefix(strings.TrimPrefix(t.Package, module), "/")
	if dir == "" {
		dir = "."
	}
	return dir + "." + t.Name
}

// summarizeSkips prints, for each suite, its skipped tests by package, with why each skipped.
func summarizeSkips(w io.Writer, module string, suites []securitymd.Suite) {
	for _, s := range suites {
		skipped := s.Run.Skipped()
		if len(skipped) == 0 {
			fmt.Fprintf(w, "skipped in %s: none\n", s.Name)
			continue
		}
		fmt.Fprintf(w, "skipped in %s: %d\n", s.Name, len(skipped))
		byPkg := map[string][]*testjson.Test{}
		for _, t := range skipped {
			byPkg[t.Package] = append(byPkg[t.Package], t)
		}
		pkgs := make([]string, 0, len(byPkg))
		for p := range byPkg {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		for _, p := range pkgs {
			fmt.Fprintf(w, "  %s (%d)\n", strings.TrimPrefix(strings.TrimPrefix(p, module), "/"), len(byPkg[p]))
			for _, t := range byPkg[p] {
				fmt.Fprintf(w, "    %s: %s\n", t.Name, t.Reason())
			}
		}
	}
}
