package cli

import (
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// recordBaseline records the workspace as the project's baseline, for the sections never
// recorded ([sandbox.RecordBaseline]), and says what it took.
func (a *App) recordBaseline(p *project.Project, rs *render.RunSpec) error {
	rec, err := sandbox.RecordBaseline(p.State, a.getenv("HOME"), rs, a.Now().UTC().Format("2006-01-02T15:04:05Z"))
	if err != nil {
		return withHint(err, "run `abox doctor`, then `abox doctor --accept-git --accept-watch` to record it again")
	}
	rec.WriteText(a.Out)
	return nil
}
