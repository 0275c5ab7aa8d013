package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/termtext"
	"github.com/aboxhq/abox/internal/watch"
)

// gitTamper: the keys of .git/config (and what it includes) that make git run code or redirect
// credentials, and the hooks, are as they were at the baseline `abox up` recorded — those of
// every repository inside the workspace too. The workspace is the agent's; the next `git
// status` on the host is the user's. A baseline recorded by an abox that read less of git
// ([watch.Baseline.OlderGitReading]) is still compared, and the finding says why settings that
// were there before may show as added.
func gitTamper(_ context.Context, e *Env) Finding {
	snap := e.snapshot()
	b, err := watch.LoadBaseline(e.Project.Baselines())
	if err != nil && !e.AcceptGit {
		return failf("`abox doctor --accept-git` records a new baseline", "%v", err)
	}
	keys, hooks := watch.CountGit(snap.Git)
	counts := fmt.Sprintf("%d key(s) that run code or redirect credentials, %d hook(s)", keys, hooks)
	if b == nil || b.GitTS == "" {
		if e.AcceptGit {
			return e.recordGit(snap, nil, counts)
		}
		return noBaseline("--accept-git")
	}
	changes := watch.DiffGit(b.Git, snap.Git)
	switch {
	case len(changes) == 0 && !snap.Repo && len(snap.GitCapped) == 0:
		return skipf("", "the workspace is not a git repository")
	case len(changes) == 0 && len(snap.GitCapped) > 0:
		// a bound hit in the baseline and now alike is no change, and hides what lies past it
		return warnf("what lies past a bound is not read: make what it names smaller (fewer repositories in the workspace, a smaller index), then `abox doctor`",
			"unchanged since %s as far as read, but git's state was not read whole: %s", b.GitTS, termtext.Line(cappedNames(snap.GitCapped))).with("git_capped", snap.GitCapped)
	case len(changes) == 0:
		return okf("unchanged since %s: %s", b.GitTS, counts)
	case e.AcceptGit:
		return e.recordGit(snap, changes, counts)
	}
	f := failf("these run code on the host when you use git: inspect .git/config and .git/hooks without running git, undo what you did not do, then `abox doctor --accept-git`",
		"changed since the baseline of %s: %s", b.GitTS, termtext.Line(watch.Summarize(changes, 8))).with("changes", changes)
	if b.OlderGitReading() {
		// What this abox reads and the older one did not shows as added; so may what an agent
		// planted since, which is why nothing is accepted without the user.
		f.Detail += "; the baseline was recorded by an abox that read less of git's settings, so some of these may have been there before it"
		f.Hint = "this abox reads more of git than the one that recorded the baseline: inspect each of these without running git (a repository inside the workspace is named by its path), undo what you did not do, then `abox doctor --accept-git`"
	}
	if len(snap.GitCapped) > 0 {
		f.Detail += "; git's state was not read whole: " + termtext.Line(cappedNames(snap.GitCapped))
	}
	return f.with("older_reading", b.OlderGitReading()).with("git_capped", snap.GitCapped)
}

// noBaseline is the finding for a project whose baseline was never recorded: abox run refuses
// to start an agent until it is.
func noBaseline(accept string) Finding {
	return warnf("run `abox up`: it records the baseline before any agent runs (or `abox doctor "+accept+"` takes the workspace as it is now)",
		"no baseline recorded, so nothing is compared; `abox run` refuses to start an agent until there is one")
}

// recordGit saves snap's git state as the baseline and reports what it holds, or what was
// accepted.
func (e *Env) recordGit(snap watch.Snapshot, changes []watch.ExecChange, counts string) Finding {
	ts := e.timestamp()
	if err := watch.UpdateBaseline(e.Project.Baselines(), func(b *watch.Baseline) { b.SetGit(snap, ts) }); err != nil {
		return failf("check the permissions of abox's state directory, then run `abox doctor` again", "recording the baseline: %v", err)
	}
	if len(changes) > 0 {
		return warnf("`abox doctor` compares with the new baseline from now on", "accepted and recorded again: %s",
			termtext.Line(watch.Summarize(changes, 8))).with("changes", changes)
	}
	present := watch.GitPresent(snap.Git)
	if len(present) > 0 {
		return warnf("review them now; `abox doctor` reports any change from this baseline on",
			"baseline recorded with %s: %s", counts, termtext.Line(firstN(present, 6))).with("present", present)
	}
	return okf("baseline recorded: nothing that runs code")
}

// execSurface: the workspace files that run code outside the sandbox — what the catalog names
// ([watch.Catalog]: CI, make, package managers and build tools, editors', agents' and shells'
// configuration, virtualenvs, the manifest) at the root, in every workspace package and
// virtualenv, and the user's watch patterns — are as they were at the baseline `abox up`
// recorded, or as abox itself wrote them, and no hidden directory the catalog does not know
// appeared since. A baseline recorded by an abox that watched less
// ([watch.Baseline.OlderWatchReading]) is still compared, and the finding says why files that
// were there before may show as added.
func execSurface(_ context.Context, e *Env) Finding {
	snap, patterns := e.snapshot(), len(e.watchScope().Patterns)
	capNote := ""
	if len(snap.Capped) > 0 {
		capNote = "; capped: " + termtext.Line(cappedNames(snap.Capped))
	}
	b, err := watch.LoadBaseline(e.Project.Baselines())
	if err != nil && !e.AcceptWatch {
		return failf("`abox doctor --accept-watch` records a new baseline", "%v", err)
	}
	if b == nil || b.WatchTS == "" {
		if e.AcceptWatch {
			return e.recordWatch(snap, nil, patterns, capNote).with("capped", snap.Capped)
		}
		return noBaseline("--accept-watch").with("capped", snap.Capped)
	}
	changes := e.untrusted(watch.DiffFiles(b.Watch, snap.Files))
	changes = append(changes, watch.NewCaps(b.WatchCapped, snap.Capped)...)
	changes = append(changes, watch.NewHidden(b.WatchHidden, snap.Hidden)...)
	switch {
	case len(changes) == 0:
		return okf("%d file(s) unchanged since %s%s", len(snap.Files), b.WatchTS, capNote).with("capped", snap.Capped)
	case e.AcceptWatch:
		return e.recordWatch(snap, changes, patterns, capNote).with("capped", snap.Capped)
	}
	f := warnf("these run outside the sandbox (CI, make, package managers, an editor, the host's agents): review them, then `abox doctor --accept-watch` to re-baseline; add a path to mounts.mask to stop the agent writing it",
		"%s%s", termtext.Line(watch.Summarize(changes, 8)), capNote)
	if b.OlderWatchReading() {
		// What this abox watches and the older one did not shows as added; so may what an agent
		// planted since, which is why nothing is accepted without the user.
		f.Detail += "; the baseline was recorded by an abox that watched fewer files, so some of these may have been there before it"
		f.Hint = "this abox watches more than the one that recorded the baseline (its catalog of what runs on the host, in every workspace package): review each of these, undo what you did not do, then `abox doctor --accept-watch`"
	}
	return f.with("changes", changes).with("capped", snap.Capped).with("older_reading", b.OlderWatchReading())
}

func (e *Env) recordWatch(snap watch.Snapshot, changes []watch.ExecChange, patterns int, capNote string) Finding {
	ts := e.timestamp()
	if err := watch.UpdateBaseline(e.Project.Baselines(), func(b *watch.Baseline) { b.SetWatch(snap, ts) }); err != nil {
		return failf("check the permissions of abox's state directory, then run `abox doctor` again", "recording the baseline: %v", err)
	}
	if len(changes) > 0 {
		return warnf("`abox doctor` compares with the new baseline from now on", "accepted and recorded again: %s",
			termtext.Line(watch.Summarize(changes, 8))).with("changes", changes)
	}
	return okf("baseline recorded: %d file(s) for %d pattern(s) and abox's catalog%s", len(snap.Files), patterns, capNote)
}

// untrusted drops changes to files whose new content is exactly what abox itself wrote: the
// review copy as rendered, the manifest as approved.
func (e *Env) untrusted(cs []watch.ExecChange) []watch.ExecChange {
	trusted := e.trustedFiles()
	var out []watch.ExecChange
	for _, c := range cs {
		if c.New != "" && trusted[c.Name] == c.New {
			continue
		}
		out = append(out, c)
	}
	return out
}

func (e *Env) trustedFiles() map[string]string {
	out := map[string]string{}
	if idx, err := e.index(); err == nil {
		for name, f := range idx.Review {
			out[render.ReviewDir+"/"+name] = "sha256:" + f.SHA256
		}
	}
	if a, err := e.approval(); err == nil { // a corrupt approval vouches for nothing
		out[manifest.FileName] = "sha256:" + render.SHA256(a.Raw)
	}
	return out
}

// watchScope is what `abox run` watches in the workspace ([sandbox.WatchScope]): the rendered
// watch and mask patterns, or, when nothing is rendered, those of the configuration and the
// manifest.
func (e *Env) watchScope() watch.Scope {
	watchList, masks := e.watchPatterns()
	return sandbox.WatchScope(e.Project.Workspace, e.Home, watchList, masks)
}

// watchPatterns returns the rendered watch and mask patterns, or those of the configuration and
// the manifest when nothing is rendered.
func (e *Env) watchPatterns() (watchList, masks []string) {
	if rs, err := e.runSpec(); err == nil {
		return rs.Watch, rs.Masks
	}
	if e.Config != nil && e.Manifest != nil {
		watchList, masks = render.Watched(e.Config, e.Manifest), render.Masks(e.Config, e.Manifest)
	}
	return watchList, masks
}

// snapshot is the workspace's execution-adjacent state now ([watch.Take]), taken once.
func (e *Env) snapshot() watch.Snapshot {
	snap, _ := e.cache.snapshot.get(func() (watch.Snapshot, error) { return watch.Take(e.watchScope()), nil })
	return snap
}

func cappedNames(cs []watch.Capped) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Pattern + " (" + c.Reason + ")"
	}
	return strings.Join(names, ", ")
}

// timestamp is the current time as a baseline timestamp.
func (e *Env) timestamp() string { return e.clock().UTC().Format("2006-01-02T15:04:05Z") }

// agentCanWrite: the agent, as the runspec's --user, can create files in the workspace. It runs
// as the workspace owner unless config.yaml says otherwise; a workspace whose owner changed
// since `abox up`, or an override the directory's mode does not admit, leaves an agent that can
// only fail, and `abox run` refuses it the same way.
func agentCanWrite(_ context.Context, e *Env) Finding {
	rs, err := e.runSpec()
	if err != nil {
		return notRendered(err)
	}
	id, ok := rs.AgentIdentity()
	if !ok {
		return failf("run `abox render` to write runspec.json again", "runspec.json gives the agent no numeric --user")
	}
	if ok, why := owner.CanWrite(e.Project.Workspace, id); !ok {
		return failf(CanWriteHint, "%s", termtext.Line(why)).with("agent", id.String())
	}
	return okf("the agent, %s, can create files in %s", id, termtext.Line(e.Project.Workspace)).with("agent", id.String())
}

// CanWriteHint names the fixes of a workspace the agent cannot write.
const CanWriteHint = "chown the project to the user who works on it and run `abox up`, or set agent.uid and agent.gid in config.yaml to an owner the directory admits"
