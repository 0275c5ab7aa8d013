package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/termtext"
)

// preflight runs [sandbox.Preflight] for p: nothing starts unless the sandbox about to run is
// the approved one. Its refusals are mapped to hints and exit statuses in exit.go; a manifest
// changed since `abox up` is shown as a diff and refused (exit 3).
func (a *App) preflight(ctx context.Context, p *project.Project) (*sandbox.Ready, error) {
	id, err := agentIdentity(p) // root's workspace: the first thing to fix
	if err != nil {
		return nil, err
	}
	pf := &sandbox.Preflight{
		Docker: a.docker(), Gateways: a.gatewayManager(), Project: p.State, Manifest: p.Manifest, Raw: p.Raw,
		Identity: id, BinarySHA256: a.binarySHA256(), Home: a.getenv("HOME"),
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
	ready, err := pf.Run(ctx)
	var changed *approval.ChangedError
	if errors.As(err, &changed) {
		fmt.Fprintf(a.Err, "%v:\n%s", changed, termtext.Text(changed.Diff))
		return nil, boundary(errorf("review the change; `abox up` approves it", "refusing to run an unapproved manifest"))
	}
	return ready, err
}

// formatCounts shows up to n names with their counts. The names come from the agent (a TLS
// server name may hold any byte), so they are escaped.
func formatCounts(list []telemetry.NameCount, n int) string {
	var parts []string
	for i, c := range list {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (x%d)", termtext.Line(c.Name), c.Count))
	}
	return strings.Join(parts, ", ")
}
