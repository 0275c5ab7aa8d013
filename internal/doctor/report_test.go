package doctor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReportText(t *testing.T) {
	rep := NewReport([]Result{
		{ID: "a.ok", Title: "passing", Finding: Finding{Status: OK, Detail: "fine"}},
		{ID: "a.warn", Title: "warning", Finding: Finding{Status: Warn, Detail: "meh", Hint: "run `abox up`"}},
		{ID: "a.fail", Title: "failing", Finding: Finding{Status: Fail, Detail: "two\nlines\x1b[2J", Hint: "run `abox render`"}},
		{ID: "a.skip", Title: "skipped", Finding: Finding{Status: Skip, Detail: "n/a", Hint: "not shown"}},
	}, []Risk{
		{ID: "risk.a", Title: "standing", Applies: true, Detail: "it stands", Hint: "mind it"},
		{ID: "risk.b", Title: "closed", Detail: "not here", Hint: "nothing"},
	})
	var b strings.Builder
	rep.WriteText(&b, TextOptions{})
	want := `! warning: meh
  ↳ run ` + "`abox up`" + `
✖ failing: two
    lines\x1b[2J
  ↳ run ` + "`abox render`" + `
- skipped: n/a

residual risks (known, not prevented):
! standing: it stands
  ↳ mind it
- closed: not here

1 ok, 1 warn, 1 fail, 1 skipped
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
	b.Reset()
	rep.WriteText(&b, TextOptions{All: true})
	if !strings.HasPrefix(b.String(), "✔ passing: fine\n") {
		t.Errorf("WriteText(All) does not list passing checks first:\n%s", b.String())
	}
}

// TestReportJSONShape: the --json shape is stable, with no null list or data.
func TestReportJSONShape(t *testing.T) {
	rep := NewReport(Run(t.Context(), &Env{}, []Check{{"x.y", "t", func(ctx ctxT, e *Env) Finding { return okf("d") }}}, nil), nil)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"checks":[{"id":"x.y","title":"t","status":"ok","detail":"d","hint":"","data":{}}],"summary":{"ok":1,"warn":0,"fail":0,"skip":0},"risks":[]}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}
