package testjson

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stream is what `go test -json` printed for four packages (go1.26, Time fields dropped):
// p/a passes, skips and fails tests and subtests; p/b does not build; p/c panics in a test
// and ends mid-test; p/d has no test files.
const stream = `{"Action":"start","Package":"p/a"}
{"Action":"run","Package":"p/a","Test":"TestPass"}
{"Action":"output","Package":"p/a","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"output","Package":"p/a","Test":"TestPass","Output":"    a_test.go:5: hello\n"}
{"Action":"output","Package":"p/a","Test":"TestPass","Output":"--- PASS: TestPass (0.00s)\n"}
{"Action":"pass","Package":"p/a","Test":"TestPass","Elapsed":0}
{"Action":"run","Package":"p/a","Test":"TestFail"}
{"Action":"output","Package":"p/a","Test":"TestFail","Output":"=== RUN   TestFail\n"}
{"Action":"output","Package":"p/a","Test":"TestFail","Output":"    a_test.go:6: boom\n"}
{"Action":"output","Package":"p/a","Test":"TestFail","Output":"--- FAIL: TestFail (0.00s)\n"}
{"Action":"fail","Package":"p/a","Test":"TestFail","Elapsed":0}
{"Action":"run","Package":"p/a","Test":"TestSkip"}
{"Action":"output","Package":"p/a","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Action":"output","Package":"p/a","Test":"TestSkip","Output":"    a_test.go:7: noise\n"}
{"Action":"output","Package":"p/a","Test":"TestSkip","Output":"    a_test.go:7: nft is not on PATH\n"}
{"Action":"output","Package":"p/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"p/a","Test":"TestSkip","Elapsed":0}
{"Action":"run","Package":"p/a","Test":"TestSubs"}
{"Action":"output","Package":"p/a","Test":"TestSubs","Output":"=== RUN   TestSubs\n"}
{"Action":"run","Package":"p/a","Test":"TestSubs/has_space"}
{"Action":"output","Package":"p/a","Test":"TestSubs/has_space","Output":"=== RUN   TestSubs/has_space\n"}
{"Action":"output","Package":"p/a","Test":"TestSubs/has_space","Output":"--- PASS: TestSubs/has_space (0.00s)\n"}
{"Action":"pass","Package":"p/a","Test":"TestSubs/has_space","Elapsed":0}
{"Action":"run","Package":"p/a","Test":"TestSubs/skips"}
{"Action":"output","Package":"p/a","Test":"TestSubs/skips","Output":"=== RUN   TestSubs/skips\n"}
{"Action":"output","Package":"p/a","Test":"TestSubs/skips","Output":"    a_test.go:10: why\n"}
{"Action":"output","Package":"p/a","Test":"TestSubs/skips","Output":"        more\n"}
{"Action":"output","Package":"p/a","Test":"TestSubs/skips","Output":"--- SKIP: TestSubs/skips (0.00s)\n"}
{"Action":"skip","Package":"p/a","Test":"TestSubs/skips","Elapsed":0}
{"Action":"run","Package":"p/a","Test":"TestSubs/skips/deeper"}
{"Action":"pass","Package":"p/a","Test":"TestSubs/skips/deeper","Elapsed":0}
{"Action":"output","Package":"p/a","Test":"TestSubs","Output":"--- PASS: TestSubs (0.00s)\n"}
{"Action":"pass","Package":"p/a","Test":"TestSubs","Elapsed":0}
{"Action":"output","Package":"p/a","Output":"FAIL\n"}
{"Action":"output","Package":"p/a","Output":"FAIL\tp/a\t0.013s\n"}
{"Action":"fail","Package":"p/a","Elapsed":0.014}

{"ImportPath":"p/b [p/b.test]","Action":"build-output","Output":"# p/b [p/b.test]\n"}
{"ImportPath":"p/b [p/b.test]","Action":"build-output","Output":"b/b_test.go:5:33: undefined: undefined\n"}
{"ImportPath":"p/b [p/b.test]","Action":"build-fail"}
{"Action":"start","Package":"p/b"}
{"Action":"output","Package":"p/b","Output":"FAIL\tp/b [build failed]\n"}
{"Action":"fail","Package":"p/b","Elapsed":0,"FailedBuild":"p/b [p/b.test]"}
{"Action":"start","Package":"p/c"}
{"Action":"run","Package":"p/c","Test":"TestOK"}
{"Action":"output","Package":"p/c","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"p/c","Test":"TestOK","Elapsed":0}
{"Action":"run","Package":"p/c","Test":"TestHangs"}
{"Action":"output","Package":"p/c","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
{"Action":"output","Package":"p/c","Test":"TestHangs","Output":"panic: test timed out after 1s\n"}
{"Action":"start","Package":"p/d"}
{"Action":"output","Package":"p/d","Output":"?   \tp/d\t[no test files]\n"}
{"Action":"skip","Package":"p/d","Elapsed":0}
`

func TestRead(t *testing.T) {
	r, err := Read(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range r.Tests() {
		got = append(got, x.Package+" "+x.Name+" "+string(x.Outcome))
	}
	want := []string{
		"p/a TestPass pass", "p/a TestFail fail", "p/a TestSkip skip", "p/a TestSubs pass",
		"p/a TestSubs/has_space pass", "p/a TestSubs/skips skip", "p/a TestSubs/skips/deeper pass",
		"p/c TestOK pass", "p/c TestHangs ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tests() (-want +got):\n%s", diff)
	}
	got = nil
	for _, p := range r.Packages() {
		got = append(got, p.Path+" "+string(p.Outcome)+map[bool]string{true: " build failed"}[p.BuildFailed])
	}
	if diff := cmp.Diff([]string{"p/a fail", "p/b fail build failed", "p/c ", "p/d skip"}, got); diff != "" {
		t.Errorf("Packages() (-want +got):\n%s", diff)
	}
	if r.Test("p/a", "TestSubs/has_space") == nil {
		t.Error(`Test("p/a", "TestSubs/has_space") = nil, want the subtest`)
	}
	if r.Test("p/a", "TestSubs/has space") != nil || r.Test("p/b", "TestPass") != nil || r.Test("p/a", "TestSub") != nil {
		t.Error("Test matched a name go test did not report exactly")
	}
	if got := r.Subtests("p/a", "TestSubs"); !cmp.Equal(got, []string{"TestSubs/has_space", "TestSubs/skips"}) {
		t.Errorf("Subtests(TestSubs) = %q", got)
	}
}

func TestSkippedAndReason(t *testing.T) {
	r, err := Read(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range r.Skipped() {
		got = append(got, x.Name+": "+x.Reason())
	}
	want := []string{"TestSkip: a_test.go:7: nft is not on PATH", "TestSubs/skips: a_test.go:10: why / more"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Skipped() (-want +got):\n%s", diff)
	}
	if got := r.Test("p/c", "TestOK").Reason(); got != "" {
		t.Errorf("Reason() of a test that logged nothing = %q", got)
	}
}

func TestReadRefusesWhatIsNotAnEvent(t *testing.T) {
	line := fmt.Sprintf("line %d: not a go test -json event", strings.Count(stream, "\n")+1)
	for _, in := range []string{"ok  \tp/a\t0.1s\n", `{"Action":"pass"` + "\n", "{}\n"} {
		if _, err := Read(strings.NewReader(stream + in)); err == nil || !strings.Contains(err.Error(), line) {
			t.Errorf("Read(stream + %q) = %v, want %q", in, err, line)
		}
	}
}

func TestPrint(t *testing.T) {
	var b strings.Builder
	r, err := Print(&b, strings.NewReader(stream+"not json\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"    a_test.go:6: boom", "--- FAIL: TestFail (0.00s)", "FAIL", "FAIL\tp/a\t0.013s",
		"# p/b [p/b.test]", "b/b_test.go:5:33: undefined: undefined", "FAIL\tp/b [build failed]",
		"?   \tp/d\t[no test files]", "not json",
		"panic: test timed out after 1s", // p/c never ended: shown at the end
		"",
	}, "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Print (-want +got):\n%s", diff)
	}
	if r.Package("p/a").Outcome != Fail {
		t.Errorf("Print's record has p/a %q", r.Package("p/a").Outcome)
	}
}

func TestPrintPassingPackage(t *testing.T) {
	in := `{"Action":"start","Package":"p/ok"}
{"Action":"run","Package":"p/ok","Test":"TestA"}
{"Action":"output","Package":"p/ok","Test":"TestA","Output":"    a_test.go:3: chatter\n"}
{"Action":"pass","Package":"p/ok","Test":"TestA"}
{"Action":"output","Package":"p/ok","Output":"harness: machine ready\n"}
{"Action":"output","Package":"p/ok","Output":"PASS\n"}
{"Action":"output","Package":"p/ok","Output":"ok  \tp/ok\t0.5s\n"}
{"Action":"pass","Package":"p/ok"}
`
	var b strings.Builder
	if _, err := Print(&b, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if b.String() != "ok  \tp/ok\t0.5s\n" {
		t.Errorf("Print of a passing package = %q, want its result line only", b.String())
	}
}
