package cli

import (
	"context"

	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
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
	return m, remedy.Edit(err)
}
