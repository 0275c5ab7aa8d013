package provision

import (
	"context"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// UpOptions are the choices of one [Up].
type UpOptions struct {
	Yes          bool // approve a widened manifest, or replace a corrupt approval, without asking
	NoBuild      bool // build no image
	ForceGateway bool // recreate the profile's gateway even if nothing changed
}

// managed labels what abox creates.
var managed = map[string]string{"abox.managed": "true"}

// Up prepares everything a run of p needs, in the order the package doc gives: daemon, lock,
// approval, artifacts, network, ~/.claude volume, images, the volume's owner, gateway,
// baseline, and the approval recorded last. It returns the runspec it prepared.
//
// A widened manifest is [Widened] and asked about, a corrupt approval [Replacing] and asked
// about unless o.Yes; refused, Up changes nothing ([ErrUnconfirmed], [*NotReplacedError],
// [ErrDeclined]).
func Up(ctx context.Context, e *Env, p *project.Project, o UpOptions) (*render.RunSpec, error) {
	if err := e.ready(ctx); err != nil {
		return nil, err
	}
	unlock, err := p.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := approve(e, p, o.Yes); err != nil {
		return nil, err
	}
	if _, err := RenderLocked(e, p, true); err != nil {
		return nil, err
	}
	rs, err := artifact.ReadRunSpec(p.State)
	if err != nil {
		return nil, err
	}
	if err := prepare(ctx, e, p, rs, o); err != nil {
		return nil, err
	}
	if err := recordBaseline(e, p, rs); err != nil {
		return nil, err
	}
	if err := approval.Record(p.State, p.Raw); err != nil {
		return nil, err
	}
	return rs, nil
}

// prepare is the docker half of [Up]: network, ~/.claude volume, images, the volume's owner,
// gateway.
func prepare(ctx context.Context, e *Env, p *project.Project, rs *render.RunSpec, o UpOptions) error {
	if err := e.Docker.EnsureNetwork(ctx, p.Config.Network, managed); err != nil {
		return err
	}
	existed, err := sandbox.CreateClaudeVolume(ctx, e.Docker, rs, map[string]string{
		"abox.managed": "true", "abox.project": p.Manifest.Project, "abox.hash": p.State.Hash,
	})
	if err != nil {
		return err
	}
	if !o.NoBuild {
		if err := BuildImages(ctx, e, p, rs); err != nil {
			return err
		}
	}
	if err := sandbox.OwnClaudeVolume(ctx, e.Docker, p.State, rs, existed, e.progressf); err != nil {
		return failed(StepVolume, err)
	}
	return upGateway(ctx, e, p, o.ForceGateway)
}

// approve compares p's manifest with the one approved by the last up. The first approval has
// nothing to compare with and a narrowing needs no consent; a widening does, unless yes. A
// corrupt approval leaves nothing to compare with, so replacing it is asked like a widening,
// and is asked even when nothing widens.
func approve(e *Env, p *project.Project, yes bool) error {
	rv, err := approval.ReviewOf(p.State, p.Manifest)
	switch {
	case err != nil:
		return err
	case rv.Corrupt != nil:
		e.report(Replacing{Corrupt: rv.Corrupt})
		if yes {
			return nil
		}
		return e.approved(&NotReplacedError{Corrupt: rv.Corrupt})
	case len(rv.Widening) == 0 || yes:
		return nil
	}
	e.report(Widened{Lines: rv.Widening})
	return e.approved(ErrUnconfirmed)
}

// BuildImages builds the images rs names for p unless they exist: the agent image first, as its
// Claude Code download is what most often needs the network and its error names the host, then
// the netd image from the running abox binary. A failure is a [*StepError] of [StepImages]: a
// refused input is an [*images.Error] with Refused set, a failed build an [*images.BuildError].
func BuildImages(ctx context.Context, e *Env, p *project.Project, rs *render.RunSpec) error {
	if err := e.Images.Agent(ctx, p.Images(), rs.Agent.Image); err != nil {
		return failed(StepImages, err)
	}
	return failed(StepImages, e.Images.Netd(ctx, p.Images(), rs.Netd.Image, e.Executable, e.ExecutableSHA256()))
}

// upGateway reconciles the profile's gateway when the project declares a server, probing it
// from the project's netd image. The project is bound already: Up's render bound it with the
// manifest Up has just approved.
func upGateway(ctx context.Context, e *Env, p *project.Project, force bool) error {
	if len(p.Manifest.DeclaredServers()) == 0 {
		return nil
	}
	res, err := gateway.Reconcile(ctx, e.Gateway, p.Manifest.Profile,
		gateway.ReconcileOptions{Force: force, Prefer: artifact.NetdImage(p.State)})
	if err != nil {
		return failed(StepGateway, err)
	}
	e.report(Reconciled{Result: res})
	return nil
}

// recordBaseline records the workspace as the project's baseline for the sections never
// recorded ([sandbox.RecordBaseline]) and reports what it took.
func recordBaseline(e *Env, p *project.Project, rs *render.RunSpec) error {
	rec, err := sandbox.RecordBaseline(p.State, e.Home, rs, e.now().UTC().Format("2006-01-02T15:04:05Z"))
	if err != nil {
		return failed(StepBaseline, err)
	}
	e.report(Baselined{Recorded: rec})
	return nil
}
