package sandbox

import (
	"fmt"
	"io"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/termtext"
	"github.com/aboxhq/abox/internal/watch"
)

// MaxExecLines bounds the changes a run summary lists one per line, and the git settings the
// recording of a baseline lists; `abox logs --runs --json` has every change.
const MaxExecLines = 20

// Fails reports whether x ends the run under run.on_exec_change = policy: the policy is fail,
// and the run changed something or its snapshot after the run was capped. A cap is what was
// not compared: a change past it, the same bound hit in both snapshots, is no change abox can
// see, so under fail it is a failure itself. An unwatched run (x nil) never fails.
func (x *ExecReport) Fails(policy string) bool {
	return x != nil && policy == manifest.ExecChangeFail && (len(x.Changes) > 0 || x.Caps() > 0)
}

// Caps counts the bounds the snapshot after the run hit: watch patterns and the reading of git.
func (x *ExecReport) Caps() int {
	if x == nil {
		return 0
	}
	return len(x.Capped) + len(x.GitCapped)
}

// WriteText lists, in a run's summary, what the run changed that runs outside the sandbox, one
// change a line up to [MaxExecLines], and, every run, the watch patterns and the reading of git
// that hit a bound. exit is the status abox exits with when policy (run.on_exec_change) is fail.
// Every line is escaped: the agent named the files.
func (x *ExecReport) WriteText(w io.Writer, policy string, exit int) {
	if x == nil {
		return
	}
	if n := len(x.Changes); n > 0 {
		termtext.Linef(w, "  execution-adjacent changes: %d — these run outside the sandbox (CI, make, an editor, git, the host's Claude Code)", n)
		for i, c := range x.Changes {
			if i == MaxExecLines {
				termtext.Linef(w, "    and %d more (`abox logs --runs --json` lists them all)", n-MaxExecLines)
				break
			}
			termtext.Linef(w, "    %s", c)
		}
		termtext.Linef(w, "  ↳ review them; `abox doctor` reports them until `abox doctor --accept-watch` (files) or `--accept-git` (git) accepts them")
		if policy == manifest.ExecChangeFail {
			termtext.Linef(w, "  ↳ run.on_exec_change is fail: abox exits %d", exit)
		}
	}
	for _, c := range x.Capped {
		termtext.Linef(w, "  watch capped: %s: %s; what lies beyond was not compared", c.Pattern, c.Reason)
	}
	for _, c := range x.GitCapped {
		termtext.Linef(w, "  git reading capped: %s: %s", c.Pattern, c.Reason)
	}
	if len(x.Changes) == 0 && x.Caps() > 0 && policy == manifest.ExecChangeFail {
		termtext.Linef(w, "  ↳ run.on_exec_change is fail and what lies past a cap was not compared: abox exits %d", exit)
	}
}

// WriteText says what [RecordBaseline] took: the number of files, with the patterns that hit
// a bound, and the git settings and hooks, up to [MaxExecLines] of them. A section recorded
// before says nothing.
func (r Recorded) WriteText(w io.Writer) {
	snap := r.Snapshot
	if r.Files {
		termtext.Linef(w, "baseline recorded: %d execution-adjacent file(s)%s", len(snap.Files), cappedNote(snap.Capped))
	}
	if r.Git {
		keys, hooks := watch.CountGit(snap.Git)
		termtext.Linef(w, "baseline recorded: git, %d key(s) that run code or redirect credentials, %d hook(s)%s", keys, hooks, cappedNote(snap.GitCapped))
		for _, s := range firstLines(watch.GitPresent(snap.Git), MaxExecLines) {
			termtext.Linef(w, "  %s", s)
		}
	}
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
