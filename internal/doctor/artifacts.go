package doctor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/render"
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
	var changed []string
	for name, want := range idx.Review {
		data, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case err != nil:
			changed = append(changed, name+" (missing)")
		case render.SHA256(data) != want.SHA256:
			changed = append(changed, name+" (edited)")
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, d := range entries {
		if _, ok := idx.Review[d.Name()]; !ok {
			changed = append(changed, d.Name()+" (not written by abox)")
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		return warnf("review them (an editor may run what they say on the host), delete what abox did not write, and run `abox render`",
			"%s differs from what abox rendered: %s", render.ReviewDir, strings.Join(changed, ", ")).with("changed", changed)
	}
	return okf("%s is as rendered", render.ReviewDir)
}

// maskedFunc reports whether a workspace-relative path is masked: it or a parent is.
func maskedFunc(paths []string) func(string) bool {
	set := map[string]bool{}
	for _, p := range paths {
		set[p] = true
	}
	return func(rel string) bool {
		for p := rel; p != "." && p != "/" && p != ""; p = filepath.ToSlash(filepath.Dir(p)) {
			if set[p] {
				return true
			}
		}
		return false
	}
}
