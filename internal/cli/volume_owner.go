package cli

import (
	"context"
	"errors"

	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// ensureClaudeVolume gives the project's ~/.claude volume to the agent ([sandbox.OwnClaudeVolume]).
func (a *App) ensureClaudeVolume(ctx context.Context, p *project.Project, rs *render.RunSpec, existed bool) error {
	err := sandbox.OwnClaudeVolume(ctx, a.docker(), p.State, rs, existed, a.progressf)
	var re *sandbox.ReownError
	switch {
	case errors.Is(err, sandbox.ErrNoAgentUser):
		return withHint(err, "run `abox render` to write runspec.json again")
	case errors.As(err, &re):
		return withHint(err, "run `abox up` again once the agent image is built")
	}
	return err
}
