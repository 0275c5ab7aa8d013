package cli

import (
	"context"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// preflightOf is [sandbox.Preflight] for p, with the checks whose rules live with other
// commands handed in: the MCP scope, the gateway's proof of its token, doctor's boundary checks.
// [launch.Run] runs it after the daemon's check; its refusals are mapped to hints and exit
// statuses by [remedy].
func (a *App) preflightOf(p *project.Project) *sandbox.Preflight {
	return &sandbox.Preflight{
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
}
