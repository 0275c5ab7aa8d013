package provision

import (
	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// Render renders p's artifacts under the project's lock, as [RenderLocked] does with the
// approval recorded before: `abox render`.
func Render(e *Env, p *project.Project) ([]render.Artifact, error) {
	unlock, err := p.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return RenderLocked(e, p, false)
}

// RenderLocked renders and writes p's artifacts, binds p to its profile's gateway, and reports
// a [Warned] for each problem of writing them and a [NoContext] for each missing context
// directory. The caller holds the project's lock. A manifest or configuration that does not
// render is a [*StepError] of [StepRender].
//
// approved is set by Up, which has just approved p.Manifest: it is bound as it is, not with the
// approval recorded before.
func RenderLocked(e *Env, p *project.Project, approved bool) ([]render.Artifact, error) {
	spec, err := e.Spec(p)
	if err != nil {
		return nil, err
	}
	arts, err := render.Render(spec)
	if err != nil {
		return nil, failed(StepRender, err)
	}
	warnings, err := artifact.Write(p.State, arts)
	if err != nil {
		return nil, err
	}
	if err := bind(e, p, approved); err != nil {
		return nil, err
	}
	for _, w := range warnings {
		e.report(Warned{Message: w})
	}
	for _, path := range sandbox.MissingContext(p.Manifest, spec.Home) {
		e.report(NoContext{Path: path})
	}
	return arts, nil
}

// bind records in the profile's registry what the project asks of its gateway
// ([gateway.BindProject]) and reports each profile it [Left]. The registry decides what the
// gateway serves, and the agent can rewrite the workspace's manifest: unless approved is set, a
// project with an approval is bound with its approved manifest, and a corrupt approval binds
// nothing and is refused.
func bind(e *Env, p *project.Project, approved bool) error {
	m := p.Manifest
	if !approved {
		ap, err := approval.Approved(p.State)
		if err != nil {
			return err
		}
		if ap != nil {
			m = ap
		}
	}
	left, err := gateway.BindProject(p.Paths.GatewaysDir(), p.Workspace, p.State.Hash, m, p.Custom)
	if err != nil {
		return err
	}
	for _, prof := range left {
		e.report(Left{Project: m.Project, Profile: prof})
	}
	return nil
}
