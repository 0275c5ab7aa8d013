package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/termtext"
)

// egressMandatory: the rendered netd policy, which netd enforces, allows the hosts Claude Code
// needs to authenticate (and refresh its token), so a hand-edited policy cannot strand it.
func egressMandatory(_ context.Context, e *Env) Finding {
	pol, err := e.netdPolicy()
	if errors.Is(err, fs.ErrNotExist) {
		return notRendered(err)
	}
	if err != nil {
		return failf("run `abox render` to write it again", "the rendered netd policy: %v", err)
	}
	want := append([]string{}, config.BaseMandatory...)
	if e.Config != nil {
		for _, h := range e.Config.Defaults.EgressMandatory {
			if !slices.Contains(want, h) {
				want = append(want, h)
			}
		}
	}
	var missing []string
	for _, h := range want {
		if !slices.Contains(pol.Egress, h) {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		return failf("run `abox render` to write the policy again", "netd.json does not allow %s", strings.Join(missing, ", ")).with("missing", missing)
	}
	return okf("%d allowlist entries, the %d mandatory hosts included", len(pol.Egress), len(want)).with("entries", len(pol.Egress))
}

// egressQueue: names the agent looked up and was denied (DNS), not yet allowed or ignored.
func egressQueue(_ context.Context, e *Env) Finding {
	return e.queueFinding(telemetry.DeniedDNS, "looked up but not allowed",
		"promote deliberately with `abox egress add <host>`, or silence with `abox egress ignore <host>`")
}

// egressRefused: names the agent connected to (TLS SNI or HTTP Host) and netd refused: a
// stronger signal than a lookup.
func egressRefused(_ context.Context, e *Env) Finding {
	return e.queueFinding(telemetry.DeniedConn, "connected to and refused (by SNI or Host)",
		"these were connected to, not merely resolved: `abox egress add <host>` to allow, `abox egress ignore <host>` to silence")
}

// recentRuns is how many of the latest runs egress.log-caps looks at.
const recentRuns = 10

// egressLogCaps: the decision logs of the latest runs stayed within netd's bounds. The agent
// decides what netd logs, so a log that reached its cap was flooded, perhaps to bury a
// decision; netd keeps the denials past the cap, and a denial it could record nowhere (its
// table of denied names full too) means the review queue may be missing a name.
func egressLogCaps(_ context.Context, e *Env) Finding {
	runs, _, err := telemetry.ReadRuns(e.Project.RunsIndex())
	if err != nil {
		return failf("check the permissions of abox's state directory, then run `abox doctor` again", "%v", err)
	}
	recent := runs[max(0, len(runs)-recentRuns):]
	var hit []string
	var dropped, lost int64
	for _, r := range recent {
		for _, c := range r.LogCaps {
			hit = append(hit, fmt.Sprintf("run %s: %s", r.ID, c))
			dropped += c.Dropped
			lost += c.Lost
		}
	}
	if len(hit) == 0 {
		return okf("the last %d run(s) stayed within them", len(recent))
	}
	f := warnf("`abox logs --dns` shows what netd kept and `abox egress list` every name it denied; read the run's transcript with `abox logs --transcript <run>`",
		"%d log(s) of the last %d run(s) hit a bound: %s", len(hit), len(recent), firstN(hit, 3))
	if lost > 0 {
		f = failf("the review queue may lack names that run was denied: read its transcript with `abox logs --transcript <run>` before allowing anything",
			"%d denial(s) recorded nowhere; %s", lost, firstN(hit, 3))
	}
	return f.with("logs", hit).with("dropped", dropped).with("denied_lost", lost)
}

// queueFinding summarizes one kind of the review queue.
func (e *Env) queueFinding(kind, what, hint string) Finding {
	skip, err := e.decided()
	if errors.Is(err, fs.ErrNotExist) {
		return notRendered(err)
	}
	if err != nil {
		return failf("run `abox render` to write the policy again", "%v", err)
	}
	items, bad, err := telemetry.Queue(e.Project.Denied(), skip)
	if err != nil {
		return failf("check the permissions of abox's state directory, then run `abox doctor` again", "%v", err)
	}
	var names, exact []string // escaped for the detail, as recorded for the data
	total := 0
	for _, it := range items {
		if it.Kind == kind {
			names = append(names, fmt.Sprintf("%s (x%d)", termtext.Line(it.Name), it.Count))
			exact = append(exact, fmt.Sprintf("%s (x%d)", it.Name, it.Count))
			total += it.Count
		}
	}
	f := okf("empty")
	if len(names) > 0 {
		f = warnf(hint, "%d name(s) %s: %s", len(names), what, firstN(names, 5))
	}
	f = f.with("names", len(names)).with("count", total).with("items", exact)
	if len(bad) > 0 {
		f = f.with("corrupt_lines", len(bad))
	}
	return f
}

// decided returns the names that left the queue: allowed by the rendered policy, or ignored in
// the manifest.
func (e *Env) decided() (func(string) bool, error) {
	pol, err := e.netdPolicy()
	if err != nil {
		return nil, fmt.Errorf("the rendered netd policy: %w", err)
	}
	list, err := pol.List()
	if err != nil {
		return nil, err
	}
	var ignored *egress.List
	if e.Manifest != nil {
		ignored, _ = egress.ParseList(e.Manifest.EgressIgnored, []int{1})
	}
	return func(name string) bool {
		return list.AllowsName(name) || (ignored != nil && ignored.AllowsName(name))
	}, nil
}
