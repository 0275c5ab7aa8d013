package sandbox

import (
	"path"
	"slices"

	"github.com/aboxhq/abox/internal/watch"
)

// WatchScope is what abox watches in the workspace ws, for [watch.Take]: the watch patterns
// given (defaults.watch, mounts.watch), less any that is also a mask pattern, on top of the
// [watch.Catalog] that Take always applies, with the paths a run masks by pattern — expanded
// now, as [FindMasks] expands them for the agent's argv — recorded as masked, unread: the agent
// cannot write them. home expands ~/ in git include paths. `abox up`, `abox run` and doctor
// all take their snapshots in this scope, so a baseline and a later look compare like with
// like.
func WatchScope(ws, home string, watchPatterns, maskPatterns []string) watch.Scope {
	var patterns []string
	for _, p := range watchPatterns {
		if !slices.Contains(maskPatterns, p) && !slices.Contains(patterns, p) {
			patterns = append(patterns, p)
		}
	}
	masked := map[string]bool{}
	if set, err := FindMasks(ws, maskPatterns, nil, 0); err == nil { // a walk that fails refuses the run anyway
		for _, m := range set.Masks {
			if m.Reason != ByTarget { // a link the agent planted must not take a watched file out of view
				masked[m.Path] = true
			}
		}
	}
	return watch.Scope{Workspace: ws, Home: home, Patterns: patterns, Masked: func(rel string) bool {
		for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
			if masked[p] {
				return true
			}
		}
		return false
	}}
}

// ExecReport is what a run changed in the execution-adjacent files and the git state: the
// difference between the snapshot taken before netd started and the one taken after teardown.
type ExecReport struct {
	Changes []watch.ExecChange
	Capped  []watch.Capped // patterns that hit a bound in the snapshot after the run
	// GitCapped are the bounds the reading of git hit in the snapshot after the run
	// ([watch.Snapshot.GitCapped]).
	GitCapped []watch.Capped
}

// snapshotBefore takes the run's first snapshot, if the run is watched. Nothing of the run
// exists yet.
func snapshotBefore(o Options) *watch.Snapshot {
	if o.Watch == nil {
		return nil
	}
	snap := watch.Take(*o.Watch)
	return &snap
}

// compareAfter takes the run's second snapshot and records the difference. It runs after
// teardown, when the agent's container is gone (or, with --keep, stopped) and nothing it
// started can still write the workspace: the agent cannot race it.
func (s *Sandbox) compareAfter(o Options, out *Outcome, before *watch.Snapshot, c *clock) {
	if before == nil {
		return
	}
	after := watch.Take(*o.Watch)
	changes := watch.Compare(*before, after)
	if changes == nil {
		changes = []watch.ExecChange{}
	}
	out.Exec = &ExecReport{Changes: changes, Capped: after.Capped, GitCapped: after.GitCapped}
	c.mark("exec diff")
}
