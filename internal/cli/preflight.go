package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/termtext"
)

// preflight checks that the daemon answers, then runs [sandbox.Preflight] for p: nothing starts
// unless the sandbox about to run is the approved one. The preflight's inspections are started
// at once, alongside the daemon's check ([sandbox.Preflight.Prefetch]); the checks still decide
// in their order. Its refusals are mapped to hints and exit statuses in exit.go; a manifest
// changed since `abox up` is shown as a diff and refused (exit 3).
func (a *App) preflight(ctx context.Context, p *project.Project) (*sandbox.Ready, error) {
	pf := &sandbox.Preflight{
		Docker: a.docker(), Gateways: a.gatewayManager(), Project: p.State, Manifest: p.Manifest, Raw: p.Raw,
		BinarySHA256: a.binarySHA256(), Home: a.getenv("HOME"),
		Render: func() ([]render.Artifact, error) {
			spec, err := a.spec(p)
			if err != nil {
				return nil, err
			}
			return render.Render(spec)
		},
		MCPScope: func(profile string, np *policy.Netd, gw *docker.Container) error {
			return a.checkMCPScope(p, profile, np, gw)
		},
		GatewayAuth: func(ctx context.Context, rs *render.RunSpec, gw *docker.Container) error {
			return a.checkGatewayAuth(ctx, p, rs, gw)
		},
		Boundary:   func(ctx context.Context) error { return a.checkBoundary(ctx, p) },
		Credential: p.Config.ClaudeCode.Credential, SecretsStore: p.Paths.SecretsStore(),
	}
	stop := pf.Prefetch(ctx)
	defer stop()
	if err := a.requireDaemon(ctx); err != nil {
		return nil, err
	}
	id, err := agentIdentity(p) // root's workspace: the first thing to fix
	if err != nil {
		return nil, err
	}
	pf.Identity = id
	ready, err := pf.Run(ctx)
	var changed *approval.ChangedError
	if errors.As(err, &changed) {
		fmt.Fprintf(a.Err, "%v:\n%s", changed, termtext.Text(changed.Diff))
		return nil, boundary(errorf("review the change; `abox up` approves it", "refusing to run an unapproved manifest"))
	}
	return ready, err
}
