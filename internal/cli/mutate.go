package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/termtext"
)

// mutate applies a CLI edit to the manifest: the whole result is re-validated, written
// atomically, re-rendered, and pushed to the project's running sandboxes. Fields and comments the
// edit does not touch are kept.
//
// A command run by the user on the host is an approval of exactly that edit, so the approved copy
// gets the same edit. To keep it exactly that edit, a workspace manifest with changes nobody
// approved (the agent can write the workspace) is refused first.
func (a *App) mutate(ctx context.Context, p *project.Project, edit func(*manifest.Doc) error) (*manifest.Manifest, error) {
	m, _, err := a.mutateReload(ctx, p, edit)
	return m, err
}

// mutateReload is [App.mutate], also returning what the push to running sandboxes did, for a
// command whose result depends on it (egress).
func (a *App) mutateReload(ctx context.Context, p *project.Project, edit func(*manifest.Doc) error) (*manifest.Manifest, sandbox.Reloaded, error) {
	m, err := a.applyMutation(p, edit)
	if err != nil {
		return nil, sandbox.Reloaded{}, err
	}
	return m, a.reloadRunning(ctx, p), nil
}

// applyMutation is the part of [App.mutate] that holds the project's lock: edit, write, render.
func (a *App) applyMutation(p *project.Project, edit func(*manifest.Doc) error) (*manifest.Manifest, error) {
	unlock, err := p.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, raw, err := approval.Edit(p.State, p.Manifest, p.Raw, edit)
	var changed *approval.ChangedError
	var invalid *approval.InvalidEditError
	switch {
	case errors.As(err, &changed):
		fmt.Fprintf(a.Err, "%v:\n%s", changed, termtext.Text(changed.Diff))
		return nil, errorf("review the change and approve it with `abox up` first", "refusing to edit an unapproved manifest")
	case errors.As(err, &invalid):
		return nil, withHint(err, "nothing was written")
	case err != nil:
		return nil, err
	}
	p.Manifest, p.Raw = m, raw
	if _, err := a.renderProject(p, false); err != nil {
		return nil, err
	}
	return m, nil
}

// reloadRunning pushes the project's new policy to its running sandboxes ([sandbox.Reload]).
func (a *App) reloadRunning(ctx context.Context, p *project.Project) sandbox.Reloaded {
	return sandbox.Reload(ctx, a.docker(), p.State.Hash, sandbox.ReloadHooks{
		Ready:    a.requireDaemon,
		Warn:     func(format string, args ...any) { a.warnf("", format, args...) },
		Progress: a.progressf,
	})
}
