package cli

import (
	"fmt"
	"io"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/watch"
)

// maxExecLines bounds the changes a run summary lists one per line; `abox logs --runs --json`
// has them all.
const maxExecLines = 20

// execScope is what a run of p watches. A project without a baseline is refused: every
// comparison, the run's own included, would then start from whatever the workspace holds,
// which an earlier agent may have planted.
func (a *App) execScope(p *project, rs *render.RunSpec) (*watch.Scope, error) {
	b, err := watch.LoadBaseline(p.state.Baselines())
	if err != nil {
		return nil, errorf("run `abox doctor` to see what changed, then `abox doctor --accept-git --accept-watch` to record the baseline again", "%v", err)
	}
	if !b.Recorded() {
		return nil, errorf("run `abox up`: it records the baseline before any agent runs",
			"the project has no baseline of the files that run outside the sandbox and of its git state, so no agent is started")
	}
	scope := sandbox.WatchScope(p.ws, a.getenv("HOME"), rs.Watch, rs.Masks)
	return &scope, nil
}

// recordBaseline records the workspace as the project's baseline, for the sections never
// recorded, and says what it took. A recorded section is left alone: `abox up` after a run must
// not accept what the run changed.
func (a *App) recordBaseline(p *project, rs *render.RunSpec) error {
	snap := watch.Take(sandbox.WatchScope(p.ws, a.getenv("HOME"), rs.Watch, rs.Masks))
	ts := a.Now().UTC().Format("2006-01-02T15:04:05Z")
	git, files, err := watch.RecordInitial(p.state.Baselines(), snap, ts)
	if err != nil {
		return errorf("run `abox doctor`, then `abox doctor --accept-git --accept-watch` to record it again", "the baseline: %v", err)
	}
	if files {
		linef(a.Out, "baseline recorded: %d execution-adjacent file(s)%s", len(snap.Files), cappedNote(snap.Capped))
	}
	if git {
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
