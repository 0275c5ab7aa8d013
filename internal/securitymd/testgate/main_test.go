package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// event lines of `go test -json` for the fixtures.
func ev(action, pkg, test string) string {
	if test == "" {
		return `{"Action":"` + action + `","Package":"example.com/m/` + pkg + `"}` + "\n"
	}
	return `{"Action":"` + action + `","Package":"example.com/m/` + pkg + `","Test":"` + test + `"}` + "\n"
}

func skipped(pkg, test, why string) string {
	return ev("run", pkg, test) +
		`{"Action":"output","Package":"example.com/m/` + pkg + `","Test":"` + test + `","Output":"    x_test.go:7: ` + why + `\n"}` + "\n" +
		ev("skip", pkg, test)
}

func passed(pkg, test string) string { return ev("run", pkg, test) + ev("pass", pkg, test) }

// repo makes a repository in a temporary directory, enters it, and writes files (name → data).
func repo(t *testing.T, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.26\n",
		"SECURITY.md": "| id | attack | control | result | test |\n|--|--|--|--|--|\n| R4 | a | c | refused | `e2e.TestCited` `internal/p.TestSub/a_case` |\n",
		".ci/allowed-skips": "# Tests that may skip in CI.\n\n# It needs a registry some machines lack.\n" +
			"e2e.TestAllowed\tneeds the host's npm registry\n",
		"hermetic.json": passed("internal/p", "TestSub") + passed("internal/p", "TestSub/a_case") + ev("pass", "internal/p", ""),
		"e2e.json":      passed("e2e", "TestCited") + skipped("e2e", "TestAllowed", "npm is not installed") + ev("pass", "e2e", ""),
	}
	for name, data := range files {
		base[name] = data
	}
	for name, data := range base {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
}

// gate runs testgate with args and returns its exit code, stdout and stderr.
func gate(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

var suites = []string{"check", "hermetic=hermetic.json", "e2e=e2e.json"}

func TestCheckGreen(t *testing.T) {
	repo(t, nil)
	code, out, errOut := gate(t, "", suites...)
	if code != 0 || errOut != "" {
		t.Fatalf("check = %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"skipped in hermetic: none\n",
		"skipped in e2e: 1\n  e2e (1)\n    TestAllowed: x_test.go:7: npm is not installed\n",
		"SECURITY.md: the 2 tests it cites ran and passed (hermetic, e2e)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckRed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // stderr lines, in order
	}{
		{"skip not allowed", map[string]string{"e2e.json": passed("e2e", "TestCited") + skipped("e2e", "TestOther", "git is not installed")},
			[]string{"error: the e2e suite skipped e2e.TestOther, which .ci/allowed-skips does not allow",
				"  ↳ it said: x_test.go:7: git is not installed; a tool missing in CI is no reason"}},
		{"hermetic skip not allowed", map[string]string{"hermetic.json": passed("internal/p", "TestSub/a_case") + skipped("internal/render", "TestRulesetCheck", "nft -c cannot run here")},
			[]string{"error: the hermetic suite skipped internal/render.TestRulesetCheck, which .ci/allowed-skips does not allow"}},
		{"cited test skipped", map[string]string{"e2e.json": skipped("e2e", "TestCited", "other e2e test binaries are running")},
			[]string{"error: row R4 cites e2e.TestCited, which skipped in the e2e suite",
				"  ↳ it said: x_test.go:7: other e2e test binaries are running; CI installs"}},
		{"cited test failed", map[string]string{"e2e.json": ev("run", "e2e", "TestCited") + ev("fail", "e2e", "TestCited")},
			[]string{"error: row R4 cites e2e.TestCited, which failed in the e2e suite"}},
		{"cited subtest missing", map[string]string{"hermetic.json": passed("internal/p", "TestSub") + passed("internal/p", "TestSub/a_case_2")},
			[]string{"error: row R4 cites internal/p.TestSub/a_case, which did not run",
				"  ↳ TestSub ran 1 subtests, not this one (TestSub/a_case_2)"}},
		{"cited test allow-listed", map[string]string{".ci/allowed-skips": "e2e.TestAllowed no registry\ne2e.TestCited flaky\n"},
			[]string{"error: .ci/allowed-skips:2 allows e2e.TestCited to skip, but SECURITY.md cites it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo(t, tc.files)
			code, _, errOut := gate(t, "", suites...)
			if code != 1 {
				t.Errorf("check = %d, want 1; stderr:\n%s", code, errOut)
			}
			if got := strings.Count(errOut, "error: "); got != len(tc.want)-strings.Count(strings.Join(tc.want, "\n"), "↳") {
				t.Errorf("%d errors, want %d:\n%s", got, len(tc.want)-strings.Count(strings.Join(tc.want, "\n"), "↳"), errOut)
			}
			rest := errOut
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stderr lacks, in order, %q:\n%s", w, errOut)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestCheckBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  []string
		want  string
	}{
		{"no reason", map[string]string{".ci/allowed-skips": "# c\n\ne2e.TestX\n"}, suites,
			"error: .ci/allowed-skips:3: e2e.TestX has no reason\n  ↳ say after the name why"},
		{"not a test", map[string]string{".ci/allowed-skips": "npm is flaky\n"}, suites,
			"error: .ci/allowed-skips:1: \"npm\" does not name a test\n  ↳ write"},
		{"twice", map[string]string{".ci/allowed-skips": "e2e.TestX a\ne2e.TestX b\n"}, suites,
			"error: .ci/allowed-skips:2: e2e.TestX is also on line 1"},
		{"no suite", nil, []string{"check"}, "error: no suite to check\n  ↳ name each"},
		{"bad suite", nil, []string{"check", "e2e.json"}, "error: suite \"e2e.json\" is not NAME=FILE"},
		{"not json", map[string]string{"e2e.json": "ok  \tp\t0.1s\n"}, suites, "error: e2e.json: line 1: not a go test -json event"},
		{"unknown command", nil, []string{"chek"}, "error: unknown command \"chek\"\n  ↳ use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo(t, tc.files)
			code, _, errOut := gate(t, "", tc.args...)
			if code != 2 || !strings.HasPrefix(errOut, tc.want) {
				t.Errorf("testgate %q = %d, stderr:\n%s\nwant 2 and a start of %q", tc.args, code, errOut, tc.want)
			}
		})
	}
}

func TestCheckPartial(t *testing.T) {
	repo(t, nil)
	code, out, errOut := gate(t, "", "check", "-partial", "hermetic=hermetic.json")
	if code != 0 || !strings.Contains(out, "SECURITY.md: the 2 tests it cites did not fail or skip so far (hermetic)") {
		t.Errorf("check -partial = %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, _, errOut = gate(t, "", "check", "hermetic=hermetic.json")
	if code != 1 || !strings.Contains(errOut, "error: row R4 cites e2e.TestCited, which did not run") {
		t.Errorf("check without the e2e suite = %d, stderr:\n%s", code, errOut)
	}
}

func TestPrintExitStatus(t *testing.T) {
	for in, want := range map[string]int{
		passed("p", "TestA") + ev("pass", "p", ""):                               0,
		ev("run", "p", "TestA") + ev("fail", "p", "TestA") + ev("fail", "p", ""): 1,
		ev("start", "p", "") + ev("run", "p", "TestA"):                           1, // never ended
	} {
		if code, _, _ := gate(t, in, "print"); code != want {
			t.Errorf("print of\n%s= %d, want %d", in, code, want)
		}
	}
}
