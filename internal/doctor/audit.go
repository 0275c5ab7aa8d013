package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/termtext"
)

// Audit is `abox doctor`: every check of [All], and with probe the live escape [Probes], except
// those whose id skip names, then the residual risks. A skip id that names no check is an
// [*UnknownCheckError], returned before anything runs. The probe sandbox runs first, its progress
// on e.Progress, so that its minutes do not count against one check's timeout.
func Audit(ctx context.Context, e *Env, probe bool, skip []string) (Report, error) {
	checks := All()
	if probe {
		checks = append(checks, Probes()...)
	}
	skipped, err := SkipSet(skip, checks)
	if err != nil {
		return Report{}, err
	}
	if probe {
		fmt.Fprintln(e.progress(), "probing: a throwaway sandbox tries each escape route as the agent user")
		e.RunProbes(ctx)
	}
	return NewReport(Run(ctx, e, checks, skipped), Risks(ctx, e)), nil
}

// BoundaryError refuses bypassPermissions: Failed are the boundary checks that did not pass.
type BoundaryError struct{ Failed []Result }

func (e *BoundaryError) Error() string {
	var b strings.Builder
	for _, r := range e.Failed {
		fmt.Fprintf(&b, "\n%s: %s", r.ID, termtext.Line(r.Detail))
	}
	n := fmt.Sprintf("%d boundary checks", len(e.Failed))
	if len(e.Failed) == 1 {
		n = "1 boundary check"
	}
	return fmt.Sprintf("refusing bypassPermissions: %s failed:%s", n, b.String())
}

// CheckBoundary is the gate `abox run` passes before it lets an agent run with
// bypassPermissions: every boundary check on the loaded project p must pass
// ([BoundaryFailures]), else it is a [*BoundaryError] naming those that failed.
func CheckBoundary(ctx context.Context, p *project.Project, h Host) error {
	failed := BoundaryFailures(ctx, p, h)
	if len(failed) == 0 {
		return nil
	}
	return &BoundaryError{Failed: failed}
}
