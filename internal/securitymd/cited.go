package securitymd

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/testjson"
)

// refRE matches a test reference in backticks: a directory whose tests .ci/run runs (e2e,
// internal/…, cmd/…), a Test or Fuzz function, and optional subtest names.
var refRE = regexp.MustCompile("`((?:e2e|internal/[a-z0-9/]+|cmd/[a-z0-9/]+)\\.((?:Test|Fuzz)[A-Za-z0-9_]*)((?:/[^`/]+)*))`")

// Citation is one test SECURITY.md cites.
type Citation struct {
	Line int    // in SECURITY.md, from 1
	Row  string // the id of the attack row citing it (E1), or "" outside the attack tables
	Ref  string // as written: internal/netd.TestDNSAnswers/wildcard_subdomain
	Dir  string // internal/netd
	Test string // TestDNSAnswers/wildcard_subdomain: go test's name for it, matched exactly
}

// where names the citation for a person: "row E1", or the line outside the tables.
func (c Citation) where() string {
	if c.Row != "" {
		return "row " + c.Row
	}
	return fmt.Sprintf("SECURITY.md:%d", c.Line)
}

// Citations returns every test reference in md, in order. A reference on a table line whose
// first cell is not itself a reference (an attack row) carries that cell as its row.
func Citations(md string) []Citation {
	var out []Citation
	for i, line := range strings.Split(md, "\n") {
		row := ""
		if first, ok := firstCell(line); ok && !strings.Contains(first, "`") {
			row = first
		}
		for _, m := range refRE.FindAllStringSubmatch(line, -1) {
			out = append(out, Citation{Line: i + 1, Row: row, Ref: m[1], Dir: m[1][:len(m[1])-len(m[2])-len(m[3])-1], Test: m[2] + m[3]})
		}
	}
	return out
}

// firstCell returns the first cell of a Markdown table line.
func firstCell(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "|")
	if !ok {
		return "", false
	}
	cell, _, ok := strings.Cut(rest, "|")
	return strings.TrimSpace(cell), ok
}

// Suite is one recorded `go test -json` run, named for messages ("hermetic", "e2e").
type Suite struct {
	Name string
	Run  *testjson.Run
}

// Problem is a cited test that proves nothing in this CI run: it failed, skipped, never
// finished or never ran. Message and Hint are the two lines CI prints.
type Problem struct {
	Ref     string
	Message string // rows E1, E4 cite e2e.TestX, which skipped in the e2e suite
	Hint    string // what to do about it
}

// CheckRan returns a problem for every test cited that did not run and pass in suites, where
// module is the repository's module path and a cited dir is the package module/dir. A test
// that runs in several suites must pass in each. With partial, some suites are still to come,
// so a test no suite has run yet is not a problem.
func CheckRan(cits []Citation, module string, suites []Suite, partial bool) []Problem {
	byRef := map[string][]Citation{}
	var refs []string
	for _, c := range cits {
		if _, seen := byRef[c.Ref]; !seen {
			refs = append(refs, c.Ref)
		}
		byRef[c.Ref] = append(byRef[c.Ref], c)
	}
	var problems []Problem
	for _, ref := range refs {
		cs := byRef[ref]
		what, hint := verdict(cs[0], module+"/"+cs[0].Dir, suites, partial)
		if what == "" {
			continue
		}
		problems = append(problems, Problem{Ref: ref, Message: citers(cs) + " " + ref + ", which " + what, Hint: hint})
	}
	return problems
}

// verdict says what went wrong with c's test in suites ("" when it passed everywhere it ran
// and ran somewhere), and what to do about it.
func verdict(c Citation, pkg string, suites []Suite, partial bool) (what, hint string) {
	ran := false
	for _, s := range suites {
		t := s.Run.Test(pkg, c.Test)
		if t == nil {
			continue
		}
		ran = true
		switch t.Outcome {
		case testjson.Fail:
			return "failed in the " + s.Name + " suite", "its output is above, and in that suite's go test -json; the test or the control it proves is broken"
		case testjson.Skip:
			return "skipped in the " + s.Name + " suite", "it said: " + orNothing(t.Reason()) + "; CI installs what tests need (.ci/run, e2e/setup.sh), so make it run there, or cite a test that does"
		case "":
			return "never finished in the " + s.Name + " suite", "its test binary died or timed out: see the end of that suite's output"
		}
	}
	if ran || partial {
		return "", ""
	}
	return "did not run", notRunHint(c, pkg, suites)
}

// notRunHint explains a cited test that no suite reported.
func notRunHint(c Citation, pkg string, suites []Suite) string {
	parent, _, _ := strings.Cut(c.Test, "/")
	var inPkg bool
	for _, s := range suites {
		p := s.Run.Package(pkg)
		if p == nil {
			continue
		}
		inPkg = true
		if p.BuildFailed {
			return fmt.Sprintf("%s failed to build in the %s suite", c.Dir, s.Name)
		}
		for i := strings.LastIndex(c.Test, "/"); i > 0; i = strings.LastIndex(c.Test[:i], "/") {
			if s.Run.Test(pkg, c.Test[:i]) != nil {
				subs := s.Run.Subtests(pkg, c.Test[:i])
				return fmt.Sprintf("%s ran %d subtests, not this one (%s); cite one exactly as go test -json names it (spaces become _)", c.Test[:i], len(subs), sample(subs))
			}
		}
	}
	if !inPkg {
		return fmt.Sprintf("no suite ran %s: .ci/run's go test commands must include it (with -tags e2e for an e2e test)", c.Dir)
	}
	return fmt.Sprintf("%s ran, but not %s: renamed, or behind a build tag no suite sets?", c.Dir, parent)
}

// citers names who cites a test: "row E1 cites", "rows E1, NS1 and SECURITY.md:312 cite".
func citers(cs []Citation) string {
	seen := map[string]bool{}
	var rows, lines []string
	for _, c := range cs {
		if w := c.where(); !seen[w] {
			seen[w] = true
			if c.Row != "" {
				rows = append(rows, c.Row)
			} else {
				lines = append(lines, w)
			}
		}
	}
	var parts []string
	switch len(rows) {
	case 0:
	case 1:
		parts = append(parts, "row "+rows[0])
	default:
		parts = append(parts, "rows "+strings.Join(rows, ", "))
	}
	parts = append(parts, lines...)
	if len(rows)+len(lines) == 1 {
		return parts[0] + " cites"
	}
	return strings.Join(parts, " and ") + " cite"
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}

// sample lists up to four names, sorted, and how many more there are.
func sample(names []string) string {
	names = append([]string(nil), names...)
	sort.Strings(names)
	if len(names) > 4 {
		return strings.Join(names[:4], ", ") + fmt.Sprintf(" and %d more", len(names)-4)
	}
	return strings.Join(names, ", ")
}
