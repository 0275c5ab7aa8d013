package cli

import (
	"errors"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/setup"
)

// writeInit validates and renders everything first, then writes config.yaml (when new or
// changed), agentbox.yaml and the artifacts. Nothing is written if anything is invalid.
func (a *App) writeInit(st *setup.State, ans setup.Answers, ps paths.Paths) error {
	pl, err := st.Plan(ans)
	if errors.Is(err, setup.ErrAnswers) {
		return withHint(err, "fix the values given to `abox init`")
	}
	if err != nil {
		return err
	}
	if pl.NewProfile != "" {
		a.progressf("new profile %s (gateway port %d)", pl.NewProfile, st.Config.Profiles[pl.NewProfile].Port)
	}
	p := &project.Project{Workspace: st.Workspace, Manifest: pl.Manifest, Config: st.Config, Custom: st.Custom, Paths: ps, State: ps.Project(st.Workspace)}
	spec, err := a.spec(p)
	if err != nil {
		return err
	}
	spec.Catalog = st.Catalog
	if _, err := render.Render(spec); err != nil {
		return withHint(err, "fix config.yaml, then run `abox init` again")
	}
	if err := pl.Write(ps.ConfigFile(), p.Lock); err != nil {
		return err
	}
	if _, err := a.renderProject(p, false); err != nil {
		return err
	}
	rep := pl.Report(ps.SecretsStore())
	rep.WriteText(a.Out)
	if rep.CredentialErr != nil {
		a.warnf("keep it a regular file of mode 0600: `abox secrets set "+rep.Credential+"` rewrites it", "the Claude credential cannot be handed to netd: %v", rep.CredentialErr)
	}
	return nil
}
