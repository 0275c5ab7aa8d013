package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/termtext"
	"github.com/aboxhq/abox/internal/watch"
)

// gitTamper: the keys of .git/config (and what it includes) that make git run code or redirect
// credentials, and the hooks, are as they were at the baseline. The workspace is the agent's;
// the next `git status` on the host is the user's.
func gitTamper(_ context.Context, e *Env) Finding {
	st, err := watch.GitState(e.Project.Workspace, e.Home)
	if errors.Is(err, watch.ErrNotRepo) {
		return skipf("", "the workspace is not a git repository")
	}
	if err != nil {
		return failf("check .git (without running git), then run `abox doctor` again", "reading .git: %v", err)
	}
	b, err := watch.LoadBaseline(e.Project.Baselines())
	if err != nil && !e.AcceptGit {
		return failf("`abox doctor --accept-git` records a new baseline", "%v", err)
	}
	keys, hooks := watch.CountGit(st)
	counts := fmt.Sprintf("%d key(s) that run code or redirect credentials, %d hook(s)", keys, hooks)
	if b == nil || b.GitTS == "" {
		return e.recordGit(st, nil, counts)
	}
	changes := watch.Diff(b.Git, st)
	switch {
	case len(changes) == 0:
		return okf("unchanged since %s: %s", b.GitTS, counts)
	case e.AcceptGit:
		return e.recordGit(st, changes, counts)
	}
	return failf("these run code on the host when you use git: inspect .git/config and .git/hooks without running git, undo what you did not do, then `abox doctor --accept-git`",
		"changed since the baseline of %s: %s", b.GitTS, describeGit(changes)).with("changes", changes)
}

// recordGit saves st as the git baseline and reports what it holds, or what was accepted.
func (e *Env) recordGit(st map[string]string, changes []watch.Change, counts string) Finding {
	ts := e.timestamp()
	if err := watch.UpdateBaseline(e.Project.Baselines(), func(b *watch.Baseline) { b.Git, b.GitTS = st, ts }); err != nil {
		return failf("check the permissions of abox's state directory, then run `abox doctor` again", "recording the baseline: %v", err)
	}
	if len(changes) > 0 {
		return warnf("`abox doctor` compares with the new baseline from now on", "accepted and recorded again: %s", describeGit(changes)).
			with("changes", changes)
	}
	var present []string
	for k, v := range st {
		present = append(present, watch.DescribeGitKey(k)+" = "+v)
	}
	slices.Sort(present)
	if len(present) > 0 {
		return warnf("review them now; `abox doctor` reports any change from this baseline on",
			"baseline recorded with %s: %s", counts, termtext.Line(firstN(present, 6))).with("present", present)
	}
	return okf("baseline recorded: nothing that runs code")
}

// describeGit names changes with their new values, for a person.
func describeGit(cs []watch.Change) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		s := c.Kind() + " " + watch.DescribeGitKey(c.Name)
		if c.New != "" && strings.HasPrefix(c.Name, "key:") {
			s += " = " + strings.ReplaceAll(c.New, "\n", " | ")
		}
		parts = append(parts, s)
	}
	return termtext.Line(firstN(parts, 8))
}

// execSurface: the workspace files that run code outside the sandbox — CI, make, package
// scripts, editor tasks, Claude Code's own settings and hooks, the devcontainer definition, the
// manifest — are as they were at the baseline, or as abox itself wrote them.
func execSurface(_ context.Context, e *Env) Finding {
	patterns, masks := e.watchPatterns()
	paths := e.maskedPaths(masks)
	files, capped := watch.Files(e.Project.Workspace, patterns, maskedFunc(paths))
	capNote := ""
	if len(capped) > 0 {
		capNote = fmt.Sprintf("; capped at %d files: %s", watch.MaxPerPattern, cappedNames(capped))
	}
	b, err := watch.LoadBaseline(e.Project.Baselines())
	if err != nil && !e.AcceptWatch {
		return failf("`abox doctor --accept-watch` records a new baseline", "%v", err)
	}
	if b == nil || b.WatchTS == "" {
		return e.recordWatch(files, nil, len(patterns), capNote).with("capped", capped)
	}
	changes := e.untrusted(watch.Diff(b.Watch, files))
	switch {
	case len(changes) == 0:
		return okf("%d file(s) unchanged since %s%s", len(files), b.WatchTS, capNote).with("capped", capped)
	case e.AcceptWatch:
		return e.recordWatch(files, changes, len(patterns), capNote).with("capped", capped)
	}
	return warnf("these run outside the sandbox (CI, make, an editor, the host's Claude Code): review them, then `abox doctor --accept-watch` to re-baseline; add a path to mounts.mask to stop the agent writing it",
		"%s%s", termtext.Line(watch.Summarize(changes, 8, describeFile(changes))), capNote).
		with("changes", changes).with("capped", capped)
}

func (e *Env) recordWatch(files map[string]string, changes []watch.Change, patterns int, capNote string) Finding {
	ts := e.timestamp()
	if err := watch.UpdateBaseline(e.Project.Baselines(), func(b *watch.Baseline) { b.Watch, b.WatchTS = files, ts }); err != nil {
		return failf("check the permissions of abox's state directory, then run `abox doctor` again", "recording the baseline: %v", err)
	}
	if len(changes) > 0 {
		return warnf("`abox doctor` compares with the new baseline from now on", "accepted and recorded again: %s",
			termtext.Line(watch.Summarize(changes, 8, describeFile(changes)))).with("changes", changes)
	}
	return okf("baseline recorded: %d file(s) for %d pattern(s)%s", len(files), patterns, capNote)
}

// describeFile names a changed file, with a symlink's targets.
func describeFile(cs []watch.Change) func(string) string {
	byName := map[string]watch.Change{}
	for _, c := range cs {
		byName[c.Name] = c
	}
	return func(name string) string {
		c := byName[name]
		if t, ok := strings.CutPrefix(c.New, "symlink:"); ok {
			return name + " (symlink → " + t + ")"
		}
		return name
	}
}

// untrusted drops changes to files whose new content is exactly what abox itself wrote: the
// review copy as rendered, the manifest as approved.
func (e *Env) untrusted(cs []watch.Change) []watch.Change {
	trusted := e.trustedFiles()
	var out []watch.Change
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
	if data, err := os.ReadFile(e.Project.Approved()); err == nil {
		out[manifest.FileName] = "sha256:" + render.SHA256(data)
	}
	return out
}

// watchPatterns returns the watch patterns (rendered ones plus abox's built-in list) and the
// mask patterns; a watch pattern that is also a mask is dropped, since the agent cannot write it.
func (e *Env) watchPatterns() (watchList, masks []string) {
	var rendered []string
	if rs, err := e.runSpec(); err == nil {
		rendered, masks = rs.Watch, rs.Masks
	} else if e.Config != nil && e.Manifest != nil {
		rendered = append(append([]string{}, e.Config.Defaults.Watch...), e.Manifest.Mounts.Watch...)
		masks = append(append([]string{}, e.Config.Defaults.Mask...), e.Manifest.Mounts.Mask...)
	}
	for _, p := range append(rendered, watch.BuiltinPatterns()...) {
		if !slices.Contains(masks, p) && !slices.Contains(watchList, p) {
			watchList = append(watchList, p)
		}
	}
	return watchList, masks
}

func cappedNames(cs []watch.Capped) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Pattern
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
