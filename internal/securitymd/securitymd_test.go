package securitymd

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// minRows is how many attack rows SECURITY.md must hold at least.
const minRows = 45

// minSucceeds is how many rows must say the attack succeeds: the attacks that succeed by design
// stay published, and a table that lost them would read safer than abox is.
const minSucceeds = 6

// results are the words a row's result may be (bold allowed).
var results = []string{"refused", "detected", "succeeds", notProven}

// notProven is the result of a row whose control no test shows yet: such a row cites no test,
// rather than one that would pass without the control.
const notProven = "not yet proven"

// header is the header row of an attack table. Its last column says, in a clause, how the cited
// test fails without the control.
var header = []string{"id", "attack", "control", "result", "test", "without the control"}

// requiredFuzz are the fuzz targets SECURITY.md must list: the parsers an agent feeds.
var requiredFuzz = []string{
	"internal/manifest.FuzzParse", "internal/egress.FuzzParse", "internal/netd.FuzzDNSHandler",
	"internal/netd.FuzzParseClientHello", "internal/netd.FuzzMCPFilter",
}

// requiredSections are headings SECURITY.md must have.
var requiredSections = []string{"Threat model", "Maturity", "Reporting", "What is not tested", "Fuzz targets"}

var (
	idRE     = regexp.MustCompile(`^[A-Z]{1,3}[0-9]{1,3}$`)
	emailRE  = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.[A-Za-z0-9.-]+`)
	pathRE   = regexp.MustCompile(`(^|[\s(\x60'"])(/home/|/Users/|/root/|/tmp/|/work/|/var/folders/|~/src/|[A-Z]:\\)`)
	headerRE = regexp.MustCompile(`(?m)^#+\s+(.*)$`)
)

// row is one row of an attack table.
type row struct {
	line                                         int
	id, attack, control, result, proofs, without string
}

func TestSecurityMD(t *testing.T) {
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, problems := check(root, string(md))
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("SECURITY.md: %d rows, %s", len(rows), tally(rows))
}

// check returns the rows of md's attack tables and every problem found, with the tests
// resolved against the repository at root.
func check(root, md string) ([]row, []string) {
	rows, problems := parseTables(md)
	if len(rows) < minRows {
		problems = append(problems, fmt.Sprintf("%d attack rows, want at least %d", len(rows), minRows))
	}
	ids := map[string]int{}
	succeeds := 0
	idx := newIndex(root)
	for _, r := range rows {
		where := fmt.Sprintf("SECURITY.md:%d: %s", r.line, r.id)
		if !idRE.MatchString(r.id) {
			problems = append(problems, fmt.Sprintf("%s: id %q is not like E1", where, r.id))
		}
		if prev, dup := ids[r.id]; dup {
			problems = append(problems, fmt.Sprintf("%s: id also used on line %d", where, prev))
		}
		ids[r.id] = r.line
		if r.attack == "" || r.control == "" {
			problems = append(problems, where+": empty attack or control")
		}
		res := strings.Trim(r.result, "* ")
		if !slices.Contains(results, res) {
			problems = append(problems, fmt.Sprintf("%s: result %q is not one of %v", where, r.result, results))
		}
		if res == "succeeds" {
			succeeds++
		}
		if r.without == "" {
			problems = append(problems, where+": no clause saying how its test fails without the control")
		}
		refs := refRE.FindAllStringSubmatch(r.proofs, -1)
		if res == notProven {
			if r.proofs != "" {
				problems = append(problems, fmt.Sprintf("%s: not yet proven, yet cites %q", where, r.proofs))
			}
		} else if len(refs) == 0 || strings.Count(r.proofs, "`") != 2*len(refs) {
			problems = append(problems, fmt.Sprintf("%s: test column %q names no test as `<dir>.<TestName>[/subtest]`", where, r.proofs))
		}
		for _, m := range refs {
			if p := idx.resolve(m[1]); p != "" {
				problems = append(problems, where+": "+p)
			}
		}
	}
	if succeeds < minSucceeds {
		problems = append(problems, fmt.Sprintf("%d rows succeed, want at least %d: attacks that succeed by design stay in the table", succeeds, minSucceeds))
	}
	return rows, append(problems, checkDocument(md, idx)...)
}

// checkDocument checks what is not in a table row: every test reference anywhere resolves, the
// fuzz targets and sections are there, and no contact address or machine path is published.
func checkDocument(md string, idx *index) []string {
	var problems []string
	for _, m := range refRE.FindAllStringSubmatch(md, -1) {
		if p := idx.resolve(m[1]); p != "" {
			problems = append(problems, "SECURITY.md: "+p)
		}
	}
	for _, f := range requiredFuzz {
		if !strings.Contains(md, "`"+f+"`") {
			problems = append(problems, "SECURITY.md does not list the fuzz target "+f)
		}
	}
	var headings []string
	for _, m := range headerRE.FindAllStringSubmatch(md, -1) {
		headings = append(headings, m[1])
	}
	for _, s := range requiredSections {
		if !slices.ContainsFunc(headings, func(h string) bool { return strings.Contains(h, s) }) {
			problems = append(problems, "SECURITY.md has no section "+s)
		}
	}
	if e := emailRE.FindString(md); e != "" {
		problems = append(problems, "SECURITY.md publishes an address: "+e)
	}
	if p := pathRE.FindString(md); p != "" {
		problems = append(problems, "SECURITY.md publishes a machine path: "+strings.TrimSpace(p))
	}
	return problems
}

// parseTables returns the rows of every Markdown table whose header is [header]; a table with
// the first five columns only is reported.
func parseTables(md string) ([]row, []string) {
	var rows []row
	var problems []string
	lines := strings.Split(md, "\n")
	for i := 0; i+1 < len(lines); i++ {
		head := lowered(cells(lines[i]))
		if len(head) < 5 || !slices.Equal(head[:5], header[:5]) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|-") {
			continue
		}
		if !slices.Equal(head, header) {
			problems = append(problems, fmt.Sprintf("SECURITY.md:%d: table header %q, want %q", i+1, head, header))
		}
		for i += 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			c := cells(lines[i])
			if len(c) != len(header) {
				problems = append(problems, fmt.Sprintf("SECURITY.md:%d: %d cells, want %d (no | inside a cell)", i+1, len(c), len(header)))
				continue
			}
			rows = append(rows, row{line: i + 1, id: c[0], attack: c[1], control: c[2], result: c[3], proofs: c[4], without: c[5]})
		}
	}
	return rows, problems
}

func cells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil
	}
	parts := strings.Split(line[1:len(line)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func lowered(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strings.ToLower(x)
	}
	return out
}

func tally(rows []row) string {
	n := map[string]int{}
	for _, r := range rows {
		n[strings.Trim(r.result, "* ")]++
	}
	return fmt.Sprintf("%d refused, %d detected, %d succeeds", n["refused"], n["detected"], n["succeeds"])
}

// index finds test functions in the *_test.go files of a directory, parsed once.
type index struct {
	root string
	dirs map[string]map[string]string // dir → function name → source of the file declaring it
}

func newIndex(root string) *index { return &index{root: root, dirs: map[string]map[string]string{}} }

// resolve returns "" when ref (dir.Func[/sub…]) names an existing test, else what is wrong.
// Directories have no dots, so the function starts after the first one. A subtest's name is
// only known once the test runs: [CheckRan] matches it exactly against go test -json in CI.
// Here only a script of TestScripts is checked, as the file it is read from.
func (x *index) resolve(ref string) string {
	dir, rest, _ := strings.Cut(ref, ".")
	fn, sub, _ := strings.Cut(rest, "/")
	funcs, err := x.load(dir)
	if err != nil {
		return fmt.Sprintf("%s: %v", ref, err)
	}
	if _, ok := funcs[fn]; !ok {
		return fmt.Sprintf("%s: no func %s in %s/*_test.go", ref, fn, dir)
	}
	if script, _, _ := strings.Cut(sub, "/"); fn == "TestScripts" && script != "" && !scriptExists(filepath.Join(x.root, dir), script) {
		return fmt.Sprintf("%s: no script testdata/script/%s.txtar in %s", ref, script, dir)
	}
	return ""
}

// scriptExists reports whether name is a testscript of TestScripts in dir.
func scriptExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, "testdata", "script", name+".txtar"))
	return err == nil
}

func (x *index) load(dir string) (map[string]string, error) {
	if funcs, ok := x.dirs[dir]; ok {
		return funcs, nil
	}
	files, err := filepath.Glob(filepath.Join(x.root, dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no test files in %s", dir)
	}
	funcs := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = string(src)
			}
		}
	}
	x.dirs[dir] = funcs
	return funcs, nil
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestCheckFindsProblems runs the checks on a small repository and document holding one of
// each mistake.
func TestCheckFindsProblems(t *testing.T) {
	root := t.TempDir()
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/x\n")
	write("e2e/a_test.go", "//go:build e2e\n\npackage e2e\n\nimport \"testing\"\n\n"+
		"func TestA(t *testing.T) { t.Run(\"sub one\", func(*testing.T) {}) }\n")
	write("internal/p/p_test.go", "package p\n\nimport \"testing\"\n\nfunc TestScripts(*testing.T) {}\nfunc FuzzX(*testing.F) {}\n")
	write("internal/p/testdata/script/flow.txtar", "")
	md := strings.Join([]string{
		"# Threat model", "# Maturity", "# Reporting", "# Fuzz targets", "`internal/p.FuzzX` `internal/p.FuzzGone`",
		"| id | attack | control | result | test | without the control |",
		"|----|--------|---------|--------|------|---------------------|",
		"| E1 | a | c | refused | `e2e.TestA` | w |",
		"| E2 | a | c | **succeeds** | `e2e.TestA/sub_one` `internal/p.TestScripts/flow` | w |",
		"| E2 | a | c | blocked | `e2e.TestA` | w |",
		"| E4 | a | c | refused | `e2e.TestGone` | w |",
		"| E5 | a | c | refused | `e2e.TestA/sub_two` | w |",
		"| E6 | a | c | refused | e2e.TestA | w |",
		"| E7 | a | c | refused | `internal/p.TestScripts/nope` | w |",
		"| E8 | a | c | refused | `e2e.TestA` |  |",
		"| E9 | a | c | not yet proven |  | w |",
		"| E10 | a | c | not yet proven | `e2e.TestA` | w |",
		"",
		"| id | attack | control | result | test |",
		"|----|--------|---------|--------|------|",
		"| E11 | a | c | refused | `e2e.TestA` |",
		"write to security@example.com, or see /home/me/notes",
	}, "\n")
	_, problems := check(root, md)
	want := []string{
		"10 attack rows, want at least 45",
		"E8: no clause saying how its test fails without the control",
		"E10: not yet proven, yet cites",
		`table header ["id" "attack" "control" "result" "test"], want`,
		"5 cells, want 6",
		"E2: id also used on line",
		`result "blocked" is not one of`,
		"e2e.TestGone: no func TestGone in e2e/*_test.go",
		"E6: test column \"e2e.TestA\" names no test",
		"internal/p.TestScripts/nope: no script testdata/script/nope.txtar in internal/p",
		"1 rows succeed, want at least 6",
		"internal/p.FuzzGone: no func FuzzGone",
		"does not list the fuzz target internal/netd.FuzzDNSHandler",
		"has no section What is not tested",
		"publishes an address: security@example.com",
		"publishes a machine path: /home/",
	}
	all := strings.Join(problems, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no problem %q in:\n%s", w, all)
		}
	}
	// A subtest's name is judged only against go test -json (TestCheckRan*): here sub_two passes.
	for _, ok := range []string{"E1:", "E9:", "TestA/sub_one", "TestA/sub_two", "TestScripts/flow"} {
		if strings.Contains(all, ok) {
			t.Errorf("a correct reference was reported (%s):\n%s", ok, all)
		}
	}
}
