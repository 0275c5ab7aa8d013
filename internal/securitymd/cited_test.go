package securitymd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/testjson"
)

// citedMD cites, from attack rows, a fuzz table and prose, tests that the suites below pass,
// fail, skip, leave unfinished and never run.
const citedMD = "# Attacks\n" +
	"| id | attack | control | result | test |\n" +
	"|----|--------|---------|--------|------|\n" +
	"| E1 | a | c | refused | `e2e.TestPasses` `internal/p.TestTable/exact_case` |\n" +
	"| E2 | a | c | refused | `e2e.TestPasses` `e2e.TestFails` |\n" +
	"| E3 | a | c | refused | `e2e.TestSkips` `internal/p.TestTable/exact case` |\n" +
	"| E4 | a | c | refused | `internal/p.TestBothSuites` `e2e.TestHangs` |\n" +
	"| E5 | a | c | refused | `e2e.TestGone` `internal/q.TestAnything` `internal/broken.TestX` |\n" +
	"| `internal/p.FuzzParse` | agentbox.yaml |\n" +
	"Denial of service beyond `internal/p.TestBound`.\n"

// suite builds one recorded run from "pkg test outcome" lines (outcome "-" never ended).
func suite(t *testing.T, name string, lines ...string) Suite {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[1] == "buildfail":
			b.WriteString(`{"Action":"fail","Package":"` + f[0] + `","FailedBuild":"` + f[0] + ` [x.test]"}` + "\n")
		case len(f) == 3:
			b.WriteString(`{"Action":"run","Package":"` + f[0] + `","Test":"` + f[1] + `"}` + "\n")
			if f[2] == "skip" {
				b.WriteString(`{"Action":"output","Package":"` + f[0] + `","Test":"` + f[1] + `","Output":"    x_test.go:9: nft is not on PATH\n"}` + "\n")
			}
			if f[2] != "-" {
				b.WriteString(`{"Action":"` + f[2] + `","Package":"` + f[0] + `","Test":"` + f[1] + `"}` + "\n")
			}
		default:
			t.Fatalf("bad fixture line %q", l)
		}
	}
	r, err := testjson.Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return Suite{Name: name, Run: r}
}

const mod = "example.com/m"

func citedSuites(t *testing.T) []Suite {
	return []Suite{
		suite(t, "hermetic",
			mod+"/internal/p TestTable pass", mod+"/internal/p TestTable/exact_case pass", mod+"/internal/p TestTable/other pass",
			mod+"/internal/p TestBothSuites pass", mod+"/internal/p FuzzParse pass", mod+"/internal/p TestBound pass",
			mod+"/internal/broken buildfail"),
		suite(t, "e2e",
			mod+"/e2e TestPasses pass", mod+"/e2e TestFails fail", mod+"/e2e TestSkips skip", mod+"/e2e TestHangs -",
			mod+"/internal/p TestBothSuites skip"),
	}
}

func TestCitations(t *testing.T) {
	var got []string
	for _, c := range Citations(citedMD) {
		got = append(got, c.Row+" "+c.Dir+" "+c.Test)
	}
	want := []string{
		"E1 e2e TestPasses", "E1 internal/p TestTable/exact_case", "E2 e2e TestPasses", "E2 e2e TestFails",
		"E3 e2e TestSkips", "E3 internal/p TestTable/exact case", "E4 internal/p TestBothSuites", "E4 e2e TestHangs",
		"E5 e2e TestGone", "E5 internal/q TestAnything", "E5 internal/broken TestX",
		" internal/p FuzzParse", " internal/p TestBound",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Citations (-want +got):\n%s", diff)
	}
}

func TestCheckRan(t *testing.T) {
	var got []string
	for _, p := range CheckRan(Citations(citedMD), mod, citedSuites(t), false) {
		got = append(got, p.Message+" ↳ "+p.Hint)
	}
	want := []string{
		"row E2 cites e2e.TestFails, which failed in the e2e suite ↳ its output is above",
		"row E3 cites e2e.TestSkips, which skipped in the e2e suite ↳ it said: x_test.go:9: nft is not on PATH; CI installs",
		// spaces are underscores in go test's names: a near miss is not a match
		"row E3 cites internal/p.TestTable/exact case, which did not run ↳ TestTable ran 2 subtests, not this one (TestTable/exact_case, TestTable/other)",
		// it passed in the hermetic suite, but a proof must hold in every suite that runs it
		"row E4 cites internal/p.TestBothSuites, which skipped in the e2e suite",
		"row E4 cites e2e.TestHangs, which never finished in the e2e suite ↳ its test binary died or timed out",
		"row E5 cites e2e.TestGone, which did not run ↳ e2e ran, but not TestGone",
		"row E5 cites internal/q.TestAnything, which did not run ↳ no suite ran internal/q",
		"row E5 cites internal/broken.TestX, which did not run ↳ internal/broken failed to build in the hermetic suite",
	}
	if len(got) != len(want) {
		t.Errorf("CheckRan returned %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range min(len(got), len(want)) {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q\nwant it to start %q", i, got[i], want[i])
		}
	}
}

func TestCheckRanNamesEveryCitingRow(t *testing.T) {
	md := citedMD + "| E9 | a | c | refused | `e2e.TestFails` |\nAnd `e2e.TestFails` again.\n"
	ps := CheckRan(Citations(md), mod, citedSuites(t), false)
	if len(ps) == 0 || ps[0].Message != "rows E2, E9 and SECURITY.md:12 cite e2e.TestFails, which failed in the e2e suite" {
		t.Errorf("first problem = %+v", ps)
	}
}

func TestCheckRanPartial(t *testing.T) {
	suites := citedSuites(t)[:1] // the e2e suite has not run yet
	if ps := CheckRan(Citations(citedMD), mod, suites, true); len(ps) != 0 {
		t.Errorf("CheckRan(partial) before the e2e suite = %+v, want nothing", ps)
	}
	suites[0] = suite(t, "hermetic", mod+"/internal/p TestTable/exact_case fail")
	ps := CheckRan(Citations(citedMD), mod, suites, true)
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "row E1 cites internal/p.TestTable/exact_case, which failed") {
		t.Errorf("CheckRan(partial) = %+v, want the failure only", ps)
	}
}

// TestCheckRanAllPass is the shape of a green CI run: every cited test passed somewhere, and
// nowhere did anything else.
func TestCheckRanAllPass(t *testing.T) {
	var lines []string
	for _, c := range Citations(citedMD) {
		lines = append(lines, mod+"/"+c.Dir+" "+strings.ReplaceAll(c.Test, " ", "_")+" pass")
	}
	md := strings.ReplaceAll(citedMD, "exact case", "exact_case")
	if ps := CheckRan(Citations(md), mod, []Suite{suite(t, "all", lines...)}, false); len(ps) != 0 {
		t.Errorf("CheckRan = %+v, want nothing", ps)
	}
}

// TestCitationsMatchTheMetaTest: the CI check and the meta-test read the same rows and
// references from the real SECURITY.md.
func TestCitationsMatchTheMetaTest(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(repoRoot(t), "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := parseTables(string(md))
	var want, got []string
	for _, r := range rows {
		for _, m := range refRE.FindAllStringSubmatch(r.proofs, -1) {
			want = append(want, r.id+" "+m[1])
		}
	}
	for _, c := range Citations(string(md)) {
		if c.Row != "" && c.Row != "id" {
			got = append(got, c.Row+" "+c.Ref)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Citations' rows differ from the meta-test's (-meta-test +Citations):\n%s", diff)
	}
}
