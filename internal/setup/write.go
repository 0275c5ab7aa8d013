package setup

import (
	"errors"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

// ErrRender: init's manifest, with the configuration it writes, does not render. It wraps the
// render's error.
var ErrRender = errors.New("init's manifest does not render")

// Hooks are what [State.Write] takes from the command: the render of `abox render`, and a line
// of progress.
type Hooks struct {
	// Spec builds the render spec of a project as `abox render` does ([project.Project.Spec]
	// with the host's facts).
	Spec func(*project.Project) (render.Spec, error)
	// Render renders and writes the project's artifacts as `abox render` does.
	Render   func(*project.Project) error
	Progress func(format string, args ...any)
}

// Write plans the answers ([State.Plan]), renders the project they make in memory, and only
// then writes config.yaml (when new or changed), agentbox.yaml and the artifacts: nothing is
// written if anything is invalid. Answers that make an invalid manifest are an [ErrAnswers], a
// manifest that does not render with the configuration an [ErrRender]. ps are abox's locations.
func (st *State) Write(ans Answers, ps paths.Paths, h Hooks) (*Report, error) {
	pl, err := st.Plan(ans)
	if err != nil {
		return nil, err
	}
	if pl.NewProfile != "" {
		h.Progress("new profile %s (gateway port %d)", pl.NewProfile, st.Config.Profiles[pl.NewProfile].Port)
	}
	p := &project.Project{Workspace: st.Workspace, Manifest: pl.Manifest, Config: st.Config, Custom: st.Custom, Paths: ps, State: ps.Project(st.Workspace)}
	spec, err := h.Spec(p)
	if err != nil {
		return nil, err
	}
	spec.Catalog = st.Catalog
	if _, err := render.Render(spec); err != nil {
		return nil, &kindError{ErrRender, err}
	}
	if err := pl.Write(ps.ConfigFile(), p.Lock); err != nil {
		return nil, err
	}
	if err := h.Render(p); err != nil {
		return nil, err
	}
	return pl.Report(ps.SecretsStore()), nil
}
