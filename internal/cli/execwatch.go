package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/watch"
)

// maxExecLines bounds the changes a run summary lists one per line; `abox logs --runs --json`
// has them all.
const maxExecLines = 20

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
	snap := rec.Snapshot
	if rec.Files {
		linef(a.Out, "baseline recorded: %d execution-adjacent file(s)%s", len(snap.Files), cappedNote(snap.Capped))
	}
	if rec.Git {
		keys, hooks := watch.CountGit(snap.Git)
		linef(a.Out, "baseline recorded: git, %d key(s) that run code or redirect credentials, %d hook(s)", keys, hooks)
		for _, s := range firstLines(watch.GitPresent(snap.Git), maxExecLines) {
			linef(a.Out, "  %s", s)
		}
	}
	return nil
}

// printExec lists what a run changed that runs outside the sandbox, one change a line.
func printExec(w io.Writer, x *sandbox.ExecReport, policy string) {
	if x == nil {
		return
	}
	if n := len(x.Changes); n > 0 {
		linef(w, "  execution-adjacent changes: %d — these run outside the sandbox (CI, make, an editor, git, the host's Claude Code)", n)
		for i, c := range x.Changes {
			if i == maxExecLines {
				linef(w, "    and %d more (`abox logs --runs --json` lists them all)", n-maxExecLines)
				break
			}
			linef(w, "    %s", c)
		}
		linef(w, "  ↳ review them; `abox doctor` reports them until `abox doctor --accept-watch` (files) or `--accept-git` (git) accepts them")
		if policy == manifest.ExecChangeFail {
			linef(w, "  ↳ run.on_exec_change is fail: abox exits %d", ExitExecChange)
		}
	}
	for _, c := range x.Capped {
		linef(w, "  watch capped: %s: %s; what lies beyond was not compared", c.Pattern, c.Reason)
	}
}

// execVerdict is the error that ends a run whose changes run.on_exec_change says to fail on.
func execVerdict(x *sandbox.ExecReport, policy string) error {
	if x == nil || len(x.Changes) == 0 || policy != manifest.ExecChangeFail {
		return nil
	}
	return &exitCode{code: ExitExecChange, err: errorf("review them; `abox doctor --accept-watch` or `--accept-git` accepts the ones you want",
		"the run changed %d execution-adjacent file(s) or git setting(s), and run.on_exec_change is fail", len(x.Changes))}
}

func cappedNote(cs []watch.Capped) string {
	if len(cs) == 0 {
		return ""
	}
	s := "; capped:"
	for _, c := range cs {
		s += fmt.Sprintf(" %s (%s)", c.Pattern, c.Reason)
	}
	return s
}

func firstLines(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}
