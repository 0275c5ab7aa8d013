package doctor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/wsfile"
)

// artifactsRendered: artifacts.json and runspec.json exist and decode. Without them there is no
// sandbox to audit, and the other artifacts.* checks skip.
func artifactsRendered(_ context.Context, e *Env) Finding {
	idx, err := e.index()
	if err == nil {
		_, err = e.runSpec()
	}
	switch {
	case errors.Is(err, artifact.ErrNotRendered):
		return failf("run `abox up` to render and build the sandbox", "nothing rendered in %s", e.Project.Artifacts())
	case err != nil:
		return failf("run `abox render` to write them again", "%v", err)
	}
	return okf("%d files, rendered by abox %s", len(idx.Files), idx.Version).with("dir", e.Project.Artifacts())
}

// artifactsIntegrity: every authoritative artifact has the hash and mode artifacts.json
// recorded when abox rendered it.
func artifactsIntegrity(_ context.Context, e *Env) Finding {
	idx, err := e.index()
	if err != nil {
		return notRendered(err)
	}
	ms, err := artifact.Verify(e.Project)
	if err != nil {
		return failf("run `abox render` to write them again", "%v", err)
	}
	if len(ms) > 0 {
		names := make([]string, len(ms))
		for i, m := range ms {
			names[i] = m.Name + " (" + m.Reason + ")"
		}
		return failf("find out what changed them (nothing in the sandbox can reach them), then run `abox render` to write them again",
			"differ from artifacts.json: %s", artifact.Describe(ms)).with("mismatches", names)
	}
	return okf("%d files match artifacts.json", len(idx.Files))
}

// artifactsCurrent: rendering the current manifest and configuration again gives the artifacts
// on disk; otherwise `abox run` refuses until `abox up`.
func artifactsCurrent(_ context.Context, e *Env) Finding {
	idx, err := e.index()
	if err != nil {
		return notRendered(err)
	}
	if e.Render == nil {
		return skipf("fix agentbox.yaml and config.yaml first (see manifest.schema)", "nothing to render from")
	}
	arts, err := e.Render()
	if err != nil {
		return failf("fix the manifest or config.yaml, then run `abox render`", "rendering: %v", err)
	}
	var stale []string
	for _, a := range arts {
		if a.Review || a.Name == render.IndexName {
			continue
		}
		if f, ok := idx.Files[a.Name]; !ok || f.SHA256 != render.SHA256(a.Data) {
			stale = append(stale, a.Name)
		}
	}
	if len(stale) > 0 {
		return warnf("run `abox up` to render and build them; `abox run` refuses stale artifacts",
			"out of date with the manifest or config.yaml: %s", strings.Join(stale, ", ")).with("stale", stale)
	}
	return okf("up to date with the manifest and config.yaml")
}

// artifactsReviewCopy: the .devcontainer/ review copy is as rendered, and holds nothing abox
// did not write. abox never reads it back, but an editor does: VS Code runs a devcontainer.json's
// initializeCommand on the host.
func artifactsReviewCopy(_ context.Context, e *Env) Finding {
	idx, err := e.index()
	if err != nil {
		return notRendered(err)
	}
	dir := filepath.Join(e.Project.Workspace, render.ReviewDir)
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return warnf("run `abox render` to write it again", "%s is missing", render.ReviewDir)
	case err != nil:
		return warnf("check it, then run `abox render`", "%s: %v", render.ReviewDir, err)
	case !st.IsDir():
		return warnf("remove it, then run `abox render`", "%s is not a directory (it is %s)", render.ReviewDir, st.Mode().Type())
	}
	changed := reviewChanges(dir, idx.Review)
	sort.Strings(changed)
	if len(changed) > 0 {
		return warnf("review them (an editor may run what they say on the host), delete what abox did not write, and run `abox render`",
			"%s differs from what abox rendered: %s", render.ReviewDir, strings.Join(changed, ", ")).with("changed", changed)
	}
	return okf("%s is as rendered", render.ReviewDir)
}

// Bounds on reading the review copy, which the agent can replace: a file larger than any abox
// renders is edited, a directory of more names than abox writes holds the agent's own.
const (
	maxReviewFile  = 1 << 20
	maxReviewNames = 256
)

// reviewChanges lists how the review copy in dir differs from what abox rendered (want). It
// reads only regular files, never through a symlink, and never blocks: a FIFO or a link the
// agent put in a file's place is named as such.
func reviewChanges(dir string, want map[string]render.IndexFile) []string {
	var changed []string
	for name, f := range want {
		data, err := wsfile.Read(filepath.Join(dir, name), maxReviewFile, false)
		var nr *wsfile.NotRegularError
		switch {
		case errors.As(err, &nr):
			changed = append(changed, name+" (now a "+wsfile.Kind(nr.Mode)+")")
		case errors.Is(err, fs.ErrNotExist):
			changed = append(changed, name+" (missing)")
		case err != nil || render.SHA256(data) != f.SHA256:
			changed = append(changed, name+" (edited)")
		}
	}
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return changed
	}
	defer d.Close()
	names, _ := d.Readdirnames(maxReviewNames)
	for _, n := range names {
		if _, ok := want[n]; !ok {
			changed = append(changed, n+" (not written by abox)")
		}
	}
	return changed
}
