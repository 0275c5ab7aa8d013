package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/securitymd"
)

// allowed is one entry of the allow-list: a test that may skip in CI, and why.
type allowed struct {
	ref, reason string
	line        int
}

// readAllowlist reads file: one test a line, named <dir>.<TestName>[/<subtest>] as go test
// names it, then why it may skip; blank lines and lines starting with # are comments. An entry
// without a reason is an error: the list is where the reasons are written down.
func readAllowlist(file string) (map[string]allowed, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, usageError{err.Error(), "create it, even with comments only: it lists the tests that may skip in CI"}
	}
	out := map[string]allowed{}
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		ref, reason := l, ""
		if i := strings.IndexAny(l, " \t"); i >= 0 {
			ref, reason = l[:i], strings.TrimSpace(l[i:])
		}
		where := fmt.Sprintf("%s:%d", file, i+1)
		switch {
		case !strings.Contains(ref, ".Test") && !strings.Contains(ref, ".Fuzz"):
			return nil, usageError{fmt.Sprintf("%s: %q does not name a test", where, ref), "write <dir>.<TestName>[/<subtest>], e.g. e2e.TestX/some_case"}
		case reason == "":
			return nil, usageError{fmt.Sprintf("%s: %s has no reason", where, ref), "say after the name why this test may skip in CI"}
		}
		if prev, dup := out[ref]; dup {
			return nil, usageError{fmt.Sprintf("%s: %s is also on line %d", where, ref, prev.line), "keep one entry per test"}
		}
		out[ref] = allowed{ref: ref, reason: reason, line: i + 1}
	}
	return out, nil
}

// checkSkips returns a problem for each test that skipped in a suite without an entry in
// allow, and for each entry naming a test SECURITY.md cites, which may never skip. A cited test
// that skipped is left to [securitymd.CheckRan], which names its row.
func checkSkips(module string, suites []securitymd.Suite, cits []securitymd.Citation, allow map[string]allowed, allowFile string) []problem {
	cited := map[string]bool{}
	for _, c := range cits {
		cited[c.Ref] = true
	}
	var problems []problem
	for _, s := range suites {
		for _, t := range s.Run.Skipped() {
			r := ref(module, t)
			if _, ok := allow[r]; ok || cited[r] {
				continue
			}
			problems = append(problems, problem{
				fmt.Sprintf("the %s suite skipped %s, which %s does not allow", s.Name, r, allowFile),
				fmt.Sprintf("it said: %s; a tool missing in CI is no reason: install it in e2e/setup.sh, or add the test to %s with why it may skip", orNothing(t.Reason()), allowFile),
			})
		}
	}
	entries := make([]allowed, 0, len(allow))
	for _, a := range allow {
		entries = append(entries, a)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].line < entries[j].line })
	for _, a := range entries {
		if cited[a.ref] {
			problems = append(problems, problem{
				fmt.Sprintf("%s:%d allows %s to skip, but SECURITY.md cites it", allowFile, a.line, a.ref),
				"a test that proves a row must run: remove the entry",
			})
		}
	}
	return problems
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}
