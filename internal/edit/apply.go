package edit

import (
	"context"
	"errors"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/sandbox"
)

// Env is what an edit takes from the machine and from the command that runs it.
type Env struct {
	// Docker lists and signals the project's running sandboxes after an edit.
	Docker *docker.Client
	// Render renders and writes the artifacts of the edited project, as `abox render` does.
	Render func(*project.Project) error
	// Ready checks that the docker daemon answers before running sandboxes are reloaded; its
	// error is why they were not ([sandbox.Reloaded.Skipped]).
	Ready func(context.Context) error
	// Warn and Progress print one line each.
	Warn, Progress func(format string, args ...any)
	// Confirm asks the user a yes/no question; nil when there is no terminal to ask on.
	Confirm func(question string) bool
	// MCPHome is the Docker MCP Toolkit's directory, for the catalogs.
	MCPHome string
}

// UnapprovedError refuses an edit of a workspace manifest that differs from its approval: the
// agent can write the workspace, and an edit by the user approves exactly that edit, never the
// changes around it. Changed holds the diff.
type UnapprovedError struct{ Changed *approval.ChangedError }

func (e *UnapprovedError) Error() string { return "refusing to edit an unapproved manifest" }

// Apply applies fn to p's manifest ([approval.Edit]: re-validated, written atomically, the
// approved copy edited alike), renders the artifacts again and pushes the new policy to the
// project's running sandboxes ([sandbox.Reload]). Fields and comments fn does not touch are
// kept; p holds the new manifest afterwards.
//
// A workspace manifest with unapproved changes is an [*UnapprovedError], a result that does not
// validate an [*approval.InvalidEditError]; either writes nothing. fn's own error is returned as
// it is.
func Apply(ctx context.Context, p *project.Project, env Env, fn func(*manifest.Doc) error) (*manifest.Manifest, sandbox.Reloaded, error) {
	m, err := write(p, env, fn)
	if err != nil {
		return nil, sandbox.Reloaded{}, err
	}
	return m, reload(ctx, p, env), nil
}

// checkApproved refuses, as [Apply] would, a workspace manifest that differs from its approval,
// for an edit that decides from the manifest before it applies anything (whether a server is
// declared): the agent can write the workspace, and a decision read from its edits would tell
// the user "already declared" of a server only the agent declared. Apply checks again under the
// project's lock; a never-approved project passes.
func checkApproved(p *project.Project) error {
	_, err := approval.Check(p.State, p.Manifest, p.Raw)
	var changed *approval.ChangedError
	switch {
	case errors.As(err, &changed):
		return &UnapprovedError{Changed: changed}
	case errors.Is(err, approval.ErrNotApproved):
		return nil
	}
	return err
}

// write is the part of [Apply] that holds the project's lock: edit, write, render.
func write(p *project.Project, env Env, fn func(*manifest.Doc) error) (*manifest.Manifest, error) {
	unlock, err := p.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, raw, err := approval.Edit(p.State, p.Manifest, p.Raw, fn)
	var changed *approval.ChangedError
	switch {
	case errors.As(err, &changed):
		return nil, &UnapprovedError{Changed: changed}
	case err != nil:
		return nil, err
	}
	p.Manifest, p.Raw = m, raw
	if err := env.Render(p); err != nil {
		return nil, err
	}
	return m, nil
}

// reload pushes the project's new policy to its running sandboxes.
func reload(ctx context.Context, p *project.Project, env Env) sandbox.Reloaded {
	return sandbox.Reload(ctx, env.Docker, p.State.Hash, sandbox.ReloadHooks{
		Ready: env.Ready, Warn: env.Warn, Progress: env.Progress,
	})
}
