package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestResultString(t *testing.T) {
	plan := &Plan{Profile: "work", Container: Container{Servers: []string{"fetch"}, Port: 8811}}
	url := plan.URL()
	for _, c := range []struct {
		r    *Result
		want string
	}{
		{&Result{Plan: plan, Removed: true}, "removed " + Name("work") + ": no project on profile work declares an MCP server"},
		{&Result{Plan: plan, Outcome: &Outcome{Action: Kept}}, "gateway " + Name("work") + ": unchanged; 1 server; not probed at " + url},
		{&Result{Plan: plan, Outcome: &Outcome{Action: Recreated, Reasons: []string{"image changed", "stopped"},
			Probe: &ProbeResult{OK: true, Tools: []json.RawMessage{[]byte(`{}`), []byte(`{}`)}}}},
			"gateway " + Name("work") + ": recreated (image changed; stopped); 1 server; healthy, 2 tools at " + url},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
	if !strings.HasPrefix((&Result{Plan: &Plan{Profile: "p"}, Outcome: &Outcome{Action: Created}}).String(), "gateway "+Name("p")+": started; 0 servers;") {
		t.Error("a created gateway is not reported as started")
	}
}
