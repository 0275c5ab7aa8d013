//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// The egress review queue end to end: what a run was denied, how `abox egress list`, the run
// summary and doctor report it, and how deciding (ignore, add) takes a name out of it.

func TestEgressReviewQueue(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("srv.test")
	upProject(t, h, "queue", nil, "")
	res := h.Abox("run", bashLines(
		`for i in 1 2 3; do claude net dns 127.0.0.1:53 wanted.test; done`,
		`for i in 1 2; do claude net dns 127.0.0.1:53 nuisance.test; done`,
		`for i in 1 2; do claude net tls `+srv.IP+`:443 refused.test; done`,
		`claude net tls `+srv.IP+`:443 $'evil\e[31m.test'`,
		`true`,
	))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	if strings.Contains(res.Stderr, "\x1b") {
		t.Errorf("the run summary printed an escape sequence from the agent:\n%q", res.Stderr)
	}
	// The summary reports lookups and connections apart: a connection is the stronger signal.
	for _, want := range []string{"denied DNS names: wanted.test (x3), nuisance.test (x2)",
		"refused connections (SNI/Host): refused.test (x2), evil\\x1b[31m.test (x1)"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("the run summary lacks %q:\n%s", want, res.Stderr)
		}
	}
	if res := h.Abox("run", "claude net dns 127.0.0.1:53 wanted.test; true"); !res.OK() {
		t.Fatalf("second abox run: %s", res)
	}
	q := reviewQueue(t, h)
	if it := q["dns wanted.test"]; it.Count != 4 || it.Runs != 2 {
		t.Errorf("queue wanted.test = %+v, want count 4 over 2 runs", it)
	}
	if it := q["dns nuisance.test"]; it.Count != 2 || it.Runs != 1 {
		t.Errorf("queue nuisance.test = %+v, want count 2 in 1 run", it)
	}
	if it := q["conn refused.test"]; it.Count != 2 {
		t.Errorf("queue refused.test = %+v, want 2 refused connections", it)
	}
	if order := queueOrder(t, h); len(order) == 0 || order[0] != "wanted.test" {
		t.Errorf("queue order %v, want the newest (wanted.test) first", order)
	}
	checkDoctorQueue(t, h)
	text := h.Abox("egress", "list")
	if strings.Contains(text.Stdout, "\x1b") || !strings.Contains(text.Stdout, `evil\x1b[31m.test`) {
		t.Errorf("egress list, want the agent's SNI escaped:\n%q", text.Stdout)
	}
	if !strings.Contains(text.Stdout, "api.anthropic.com  (mandatory)") {
		t.Errorf("egress list does not mark the mandatory hosts:\n%s", text.Stdout)
	}
	// Deciding takes a name out of the queue: ignoring it, or allowing it.
	mustAbox(t, h, "egress", "ignore", "nuisance.test")
	if add := h.Abox("egress", "add", "nuisance.test"); add.OK() || !strings.Contains(add.Stderr, "abox egress unignore nuisance.test") {
		t.Errorf("egress add of an ignored name: %s, want a refusal naming unignore", add)
	}
	mustAbox(t, h, "egress", "add", "wanted.test")
	q = reviewQueue(t, h)
	for _, k := range []string{"dns nuisance.test", "dns wanted.test"} {
		if it, ok := q[k]; ok {
			t.Errorf("%s still in the queue: %+v", k, it)
		}
	}
	if _, ok := q["conn refused.test"]; !ok {
		t.Errorf("refused.test left the queue undecided: %v", q)
	}
	for arg, code := range map[string]int{"wanted.test": 0, "WANTED.test.": 0, "wanted.test:22": 1, "nuisance.test": 1, "api.anthropic.com": 0} {
		if res := h.Abox("egress", "check", arg); res.ExitCode != code {
			t.Errorf("egress check %s: exit %d, want %d\n%s", arg, res.ExitCode, code, res)
		}
	}
}

// checkDoctorQueue expects doctor to report the denied lookups and the refused connections as
// two findings.
func checkDoctorQueue(t *testing.T, h *harness.H) {
	t.Helper()
	res := h.Abox("doctor", "--json")
	var rep struct {
		Checks []struct {
			ID, Status, Detail string
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res)
	}
	want := map[string]string{"egress.queue": "wanted.test (x4)", "egress.refused": "refused.test (x2)"}
	for _, c := range rep.Checks {
		if w, ok := want[c.ID]; ok {
			if c.Status != "warn" || !strings.Contains(c.Detail, w) {
				t.Errorf("doctor %s: %s %q, want a warning naming %s", c.ID, c.Status, c.Detail, w)
			}
			delete(want, c.ID)
		}
	}
	if len(want) > 0 {
		t.Errorf("doctor --json lacks %v", want)
	}
}

// queueItem is one row of the review queue in `abox egress list --json`.
type queueItem struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Count int    `json:"count"`
	Runs  int    `json:"runs"`
}

// reviewQueue returns the review queue by "kind name".
func reviewQueue(t *testing.T, h *harness.H) map[string]queueItem {
	t.Helper()
	out := map[string]queueItem{}
	for _, it := range queueItems(t, h) {
		out[it.Kind+" "+it.Name] = it
	}
	return out
}

func queueOrder(t *testing.T, h *harness.H) []string {
	t.Helper()
	var names []string
	for _, it := range queueItems(t, h) {
		names = append(names, it.Name)
	}
	return names
}

func queueItems(t *testing.T, h *harness.H) []queueItem {
	t.Helper()
	res := mustAbox(t, h, "egress", "list", "--json")
	var rep struct {
		Queue []queueItem `json:"queue"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("egress list --json: %v\n%s", err, res)
	}
	return rep.Queue
}
