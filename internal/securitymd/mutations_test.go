package securitymd

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The mutation checks (.ci/mutate) run what each patch's header names; SECURITY.md says which
// patch shows which row. These checks keep the two the same, so that a row's "(mutation X)"
// names a patch that exists and runs, and the table lists every patch as its header has it.

var (
	mutationEntryRE = regexp.MustCompile("^\\| `([A-Z]{1,3}[0-9]{1,3}-[a-z0-9-]+)` \\|(.*)\\|(.*)\\|(.*)\\|$")
	mutationRefRE   = regexp.MustCompile(`\bmutations? ([A-Z]{1,3}[0-9]{1,3}(?:(?:, | and | or )[A-Z]{1,3}[0-9]{1,3})*)`)
	idWordRE        = regexp.MustCompile(`[A-Z]{1,3}[0-9]{1,3}`)
)

// patchHeader is what a patch's header says: the rows it shows and its tests as SECURITY.md
// names them (<dir>.<TestName>[/subtest]).
type patchHeader struct{ rows, tests []string }

func parsePatchHeader(data string) patchHeader {
	var h patchHeader
	for _, line := range strings.Split(data, "\n") {
		if strings.HasPrefix(line, "diff --git ") {
			break
		}
		if rest, ok := strings.CutPrefix(line, "rows: "); ok {
			h.rows = append(h.rows, strings.Fields(rest)...)
		}
		if rest, ok := strings.CutPrefix(line, "test: "); ok {
			if pkg, name, ok := strings.Cut(rest, " "); ok {
				h.tests = append(h.tests, strings.TrimPrefix(pkg, "./")+"."+strings.TrimSpace(name))
			}
		}
	}
	return h
}

// checkMutations compares md's mutation table and its rows' "(mutation X)" with patches
// (name without .patch → content).
func checkMutations(md string, patches map[string]string) []string {
	var problems []string
	rows, _ := parseTables(md)
	byID := map[string]row{}
	for _, r := range rows {
		byID[r.id] = r
	}
	prefixes := map[string]bool{}
	for name := range patches {
		id, _, _ := strings.Cut(name, "-")
		prefixes[id] = true
	}
	entries := map[string]patchHeader{}
	for i, line := range strings.Split(md, "\n") {
		m := mutationEntryRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		if _, dup := entries[m[1]]; dup {
			problems = append(problems, fmt.Sprintf("SECURITY.md:%d: mutation %s listed twice", i+1, m[1]))
		}
		var tests []string
		for _, ref := range refRE.FindAllStringSubmatch(m[4], -1) {
			tests = append(tests, ref[1])
		}
		entries[m[1]] = patchHeader{rows: strings.Fields(m[3]), tests: tests}
	}
	for _, name := range slices.Sorted(maps.Keys(patches)) {
		h := parsePatchHeader(patches[name])
		e, ok := entries[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("patch %s is not in SECURITY.md's mutation table", name))
		} else {
			if !sameSet(e.rows, h.rows) {
				problems = append(problems, fmt.Sprintf("mutation table: %s names rows %q, its header %q", name, e.rows, h.rows))
			}
			if !sameSet(e.tests, h.tests) {
				problems = append(problems, fmt.Sprintf("mutation table: %s names tests %q, its header %q", name, e.tests, h.tests))
			}
		}
		id, _, _ := strings.Cut(name, "-")
		for _, r := range h.rows {
			row, ok := byID[r]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("patch %s names row %s, which SECURITY.md does not have", name, r))
			case !strings.Contains(row.without, "mutation") || !slices.Contains(idWordRE.FindAllString(row.without, -1), id):
				problems = append(problems, fmt.Sprintf("SECURITY.md:%d: %s does not name mutation %s, whose patch %s shows it", row.line, r, id, name))
			}
		}
	}
	for name := range entries {
		if _, ok := patches[name]; !ok {
			problems = append(problems, fmt.Sprintf("mutation table names %s, which .ci/mutations does not hold", name))
		}
	}
	for _, r := range rows {
		for _, m := range mutationRefRE.FindAllStringSubmatch(r.without, -1) {
			for _, id := range idWordRE.FindAllString(m[1], -1) {
				if !prefixes[id] {
					problems = append(problems, fmt.Sprintf("SECURITY.md:%d: %s names mutation %s, and no patch %s-*.patch exists", r.line, r.id, id, id))
				}
			}
		}
	}
	slices.Sort(problems)
	return problems
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func TestMutationTable(t *testing.T) {
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, ".ci", "mutations", "*.patch"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no patches in .ci/mutations (%v)", err)
	}
	patches := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		patches[strings.TrimSuffix(filepath.Base(f), ".patch")] = string(data)
	}
	for _, p := range checkMutations(string(md), patches) {
		t.Error(p)
	}
}

// TestCheckMutationsFindsProblems: each way the table and the patches can disagree is named.
func TestCheckMutationsFindsProblems(t *testing.T) {
	md := strings.Join([]string{
		"| id | attack | control | result | test | without the control |",
		"|----|--------|---------|--------|------|---------------------|",
		"| E1 | a | c | refused | `e2e.TestA` | w (mutation E1) |",
		"| E2 | a | c | refused | `e2e.TestA` | w |",
		"| E3 | a | c | refused | `e2e.TestA` | w (mutation E9) |",
		"",
		"| patch | control turned off | rows | tests that must fail |",
		"|-------|--------------------|------|----------------------|",
		"| `E1-ok` | c | E1 | `e2e.TestA` |",
		"| `E1-other-rows` | c | E1 E2 | `e2e.TestA` |",
		"| `E1-other-tests` | c | E1 | `e2e.TestB` |",
		"| `E7-gone` | c | E1 | `e2e.TestA` |",
		"| `E4-no-row` | c | E4 | `e2e.TestA` |",
	}, "\n")
	header := func(rows string, tests ...string) string {
		s := "Mutation.\n\nrows: " + rows + "\n"
		for _, t := range tests {
			s += "test: " + t + "\n"
		}
		return s + "\ndiff --git a/x b/x\n+rows: E5\n"
	}
	patches := map[string]string{
		"E1-ok":          header("E1", "./e2e TestA"),
		"E1-other-rows":  header("E1", "./e2e TestA"),
		"E1-other-tests": header("E1", "./e2e TestA"),
		"E2-unlisted":    header("E2", "./e2e TestA"),
		"E4-no-row":      header("E4", "./e2e TestA"),
	}
	got := checkMutations(md, patches)
	want := []string{
		"mutation table: E1-other-rows names rows",
		"mutation table: E1-other-tests names tests",
		"mutation table names E7-gone, which .ci/mutations does not hold",
		"patch E2-unlisted is not in SECURITY.md's mutation table",
		"SECURITY.md:4: E2 does not name mutation E2, whose patch E2-unlisted shows it",
		"patch E4-no-row names row E4, which SECURITY.md does not have",
		"SECURITY.md:5: E3 names mutation E9, and no patch E9-*.patch exists",
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("no problem %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}
