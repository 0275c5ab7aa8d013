package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/termtext"
)

// mutate applies a CLI edit to the manifest: the whole result is re-validated, written
// atomically, re-rendered, and pushed to the project's running sandboxes. Fields and comments the
// edit does not touch are kept.
//
// A command run by the user on the host is an approval of exactly that edit, so the approved copy
// gets the same edit. To keep it exactly that edit, a workspace manifest with changes nobody
// approved (the agent can write the workspace) is refused first.
func (a *App) mutate(ctx context.Context, p *project, edit func(*manifest.Doc) error) (*manifest.Manifest, error) {
	m, _, err := a.mutateReload(ctx, p, edit)
	return m, err
}

// mutateReload is [App.mutate], also returning what the push to running sandboxes did, for a
// command whose result depends on it (egress).
func (a *App) mutateReload(ctx context.Context, p *project, edit func(*manifest.Doc) error) (*manifest.Manifest, sandbox.Reloaded, error) {
	m, err := a.applyMutation(p, edit)
	if err != nil {
		return nil, sandbox.Reloaded{}, err
	}
	return m, a.reloadRunning(ctx, p), nil
}

// applyMutation is the part of [App.mutate] that holds the project's lock: edit, write, render.
func (a *App) applyMutation(p *project, edit func(*manifest.Doc) error) (*manifest.Manifest, error) {
	unlock, err := p.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	// A never-approved project is edited in the workspace only; a corrupt approval is refused
	// (exit 3), as `abox run` refuses it.
	_, err = approval.Check(p.state, p.manifest, p.raw)
	hasApproval := !errors.Is(err, approval.ErrNotApproved)
	var changed *approval.ChangedError
	if errors.As(err, &changed) {
		fmt.Fprintf(a.Err, "%v:\n%s", changed, termtext.Text(changed.Diff))
		return nil, errorf("review the change and approve it with `abox up` first", "refusing to edit an unapproved manifest")
	}
	if err != nil && hasApproval {
		return nil, err
	}
	doc, m, err := applyEdit(p.raw, edit)
	if err != nil {
		return nil, err
	}
	if err := statefs.WriteFile(p.manifestPath(), doc.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if hasApproval {
		if err := approval.Record(p.state, doc.Bytes()); err != nil {
			return nil, err
		}
	}
	p.manifest, p.raw = m, doc.Bytes()
	if _, err := a.renderProject(p); err != nil {
		return nil, err
	}
	return m, nil
}

// applyEdit runs edit on the document of raw and validates the result.
func applyEdit(raw []byte, edit func(*manifest.Doc) error) (*manifest.Doc, *manifest.Manifest, error) {
	doc, err := manifest.ParseDoc(raw, manifest.FileName)
	if err != nil {
		return nil, nil, err
	}
	if err := edit(doc); err != nil {
		return nil, nil, err
	}
	m, err := doc.Manifest(manifest.FileName)
	if err != nil {
		return nil, nil, withHint(err, "nothing was written")
	}
	return doc, m, nil
}

// reloadRunning pushes the project's new policy to its running sandboxes ([sandbox.Reload]).
func (a *App) reloadRunning(ctx context.Context, p *project) sandbox.Reloaded {
	return sandbox.Reload(ctx, a.docker(), p.state.Hash, sandbox.ReloadHooks{
		Ready:    a.requireDaemon,
		Warn:     func(format string, args ...any) { a.warnf("", format, args...) },
		Progress: a.progressf,
	})
}
