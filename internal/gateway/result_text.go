package gateway

import (
	"fmt"
	"strings"
)

// String is the line `abox gateway up` (and `abox up`) prints for what [Reconcile] did.
func (r *Result) String() string {
	if r.Removed {
		return fmt.Sprintf("removed %s: no project on profile %s declares an MCP server", Name(r.Plan.Profile), r.Plan.Profile)
	}
	out := r.Outcome
	what := map[string]string{Created: "started", Kept: "unchanged", Recreated: "recreated"}[out.Action]
	if len(out.Reasons) > 0 {
		what += " (" + strings.Join(out.Reasons, "; ") + ")"
	}
	health := "not probed"
	if out.Probe != nil {
		health = "healthy, " + count(len(out.Probe.Tools), "tool", "tools")
	}
	return fmt.Sprintf("gateway %s: %s; %s; %s at %s", Name(r.Plan.Profile), what,
		count(len(r.Plan.Container.Servers), "server", "servers"), health, r.Plan.URL())
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
