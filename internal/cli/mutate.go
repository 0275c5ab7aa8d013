package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/termtext"
)

// editEnv is what the edit package takes of the machine: the docker client, the render of
// `abox render`, and a prompt when abox runs on a terminal.
func (a *App) editEnv() edit.Env {
	env := edit.Env{
		Docker:   a.docker(),
		Render:   func(p *project.Project) error { _, err := a.renderProject(p, false); return err },
		Ready:    a.requireDaemon,
		Warn:     func(format string, args ...any) { a.warnf("", format, args...) },
		Progress: a.progressf,
		MCPHome:  a.mcpHome(),
	}
	if a.TTY {
		env.Confirm = a.confirm
	}
	return env
}

// mutate applies a CLI edit to the manifest ([edit.Apply]): validated, written, approved,
// rendered, and pushed to the project's running sandboxes.
func (a *App) mutate(ctx context.Context, p *project.Project, fn func(*manifest.Doc) error) (*manifest.Manifest, error) {
	m, _, err := edit.Apply(ctx, p, a.editEnv(), fn)
	return m, a.explainEdit(err)
}

// explainEdit names the fix of a refused edit; the diff of an unapproved manifest is printed
// first, escaped (the agent can write it).
func (a *App) explainEdit(err error) error {
	var unapproved *edit.UnapprovedError
	var invalid *approval.InvalidEditError
	switch {
	case errors.As(err, &unapproved):
		fmt.Fprintf(a.Err, "%v:\n%s", unapproved.Changed, termtext.Text(unapproved.Changed.Diff))
		return withHint(err, "review the change and approve it with `abox up` first")
	case errors.As(err, &invalid):
		return withHint(err, "nothing was written")
	}
	return err
}
