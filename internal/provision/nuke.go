package provision

import (
	"context"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// NukeOptions are the choices of one [Nuke].
type NukeOptions struct {
	// RemoveLogin decides, once everything else is gone, whether the project's Claude login
	// volume (volume) goes too. It holds the login, so nil keeps it.
	RemoveLogin func(volume string) bool
}

// Nuked is the end of a [Nuke]: the Claude login volume, and whether it was removed.
type Nuked struct {
	Login        string
	LoginRemoved bool
}

// Nuke removes what abox made for p, as the package doc says: under the project's lock its
// containers, gateway bindings, caches and state ([Removed]); then the clones of its isolated
// runs ([Swept]), which isolate removes under the lock it takes itself, since nothing writes a
// clone once the containers are gone; then the Claude login volume if o.RemoveLogin says so.
func Nuke(ctx context.Context, e *Env, p *project.Project, o NukeOptions) (*Nuked, error) {
	n, err := nukeLocked(ctx, e, p)
	if err != nil {
		return nil, err
	}
	e.report(Removed{Project: p.Manifest.Project, Containers: n})
	clones, err := (&isolate.Repo{Project: p.State}).Sweep()
	if err != nil {
		return nil, failed(StepClones, err)
	}
	if len(clones) > 0 {
		e.report(Swept{Clones: len(clones)})
	}
	out := &Nuked{Login: render.ClaudeVolume(p.State.Hash)}
	if o.RemoveLogin == nil || !o.RemoveLogin(out.Login) {
		return out, nil
	}
	if err := e.Docker.VolumeRemove(ctx, out.Login); err != nil {
		return nil, err
	}
	out.LoginRemoved = true
	return out, nil
}

// nukeLocked removes the project's containers, gateway bindings, caches and state under its
// lock, and returns how many containers it removed. No spare netd starts meanwhile: one being
// started is waited for, so that its container is among those removed.
func nukeLocked(ctx context.Context, e *Env, p *project.Project) (int, error) {
	unlock, err := p.Lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := e.ready(ctx); err != nil {
		return 0, err
	}
	release, err := sandbox.HoldSpares(p.State, sandbox.SpareHoldWait)
	if err != nil {
		return 0, failed(StepSpares, err)
	}
	defer release()
	// A run whose abox and warden are gone is finished and recorded first, as the next run
	// would; what is left of it goes with the rest.
	if reaped, err := sandbox.Reap(ctx, e.Docker, p.State); err == nil {
		for _, r := range reaped {
			e.report(Reaped{Reaped: r})
		}
	}
	removed, err := sandbox.RemoveContainers(ctx, e.Docker, p.State.Hash)
	if err != nil {
		return 0, err
	}
	if err := unbind(ctx, e, p); err != nil {
		return 0, err
	}
	if err := sandbox.RemoveCaches(ctx, e.Docker, p.State.Hash); err != nil {
		return removed, failed(StepCaches, err)
	}
	return removed, sandbox.RemoveState(p.State)
}

// unbind removes the project from every registry, and a gateway no project needs any more
// ([gateway.Manager.UnbindProject]), reporting each profile it is [Unbound] from.
func unbind(ctx context.Context, e *Env, p *project.Project) error {
	from, err := e.Gateway.Manager().UnbindProject(ctx, p.Paths.GatewaysDir(), p.State.Hash)
	if err != nil {
		return err
	}
	for _, u := range from {
		e.report(Unbound{Unbound: u})
	}
	return nil
}
