package cli

import (
	"errors"

	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/watch"
)

// execScope is what a run of p watches ([sandbox.RunScope]); a project without a baseline is
// refused.
func (a *App) execScope(p *project.Project, rs *render.RunSpec) (*watch.Scope, error) {
	scope, err := sandbox.RunScope(p.State, a.getenv("HOME"), rs)
	switch {
	case errors.Is(err, sandbox.ErrNoBaseline):
		return nil, withHint(err, "run `abox up`: it records the baseline before any agent runs")
	case err != nil:
		return nil, withHint(err, "run `abox doctor` to see what changed, then `abox doctor --accept-git --accept-watch` to record the baseline again")
	}
	return scope, nil
}

// recordBaseline records the workspace as the project's baseline, for the sections never
// recorded ([sandbox.RecordBaseline]), and says what it took.
func (a *App) recordBaseline(p *project.Project, rs *render.RunSpec) error {
	rec, err := sandbox.RecordBaseline(p.State, a.getenv("HOME"), rs, a.Now().UTC().Format("2006-01-02T15:04:05Z"))
	if err != nil {
		return withHint(err, "run `abox doctor`, then `abox doctor --accept-git --accept-watch` to record it again")
	}
	rec.WriteText(a.Out)
	return nil
}

// execVerdict is the error that ends a run whose changes run.on_exec_change says to fail on.
func execVerdict(x *sandbox.ExecReport, policy string) error {
	if !x.Fails(policy) {
		return nil
	}
	return &exitCode{code: ExitExecChange, err: errorf("review them; `abox doctor --accept-watch` or `--accept-git` accepts the ones you want",
		"the run changed %d execution-adjacent file(s) or git setting(s), and run.on_exec_change is fail", len(x.Changes))}
}
