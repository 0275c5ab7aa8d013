package cli

import (
	"context"
	"fmt"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/remedy"
)

func (a *App) gatewayManager() *gateway.Manager {
	m := &gateway.Manager{Docker: a.docker(), Progress: a.progressf, Now: a.Now}
	if ps, err := a.Paths(); err == nil {
		m.GatewaysDir = ps.GatewaysDir() // the gateway's log is shown with its secrets removed
	}
	return m
}

// gatewayEnv is what the gateway package needs of the machine.
func (a *App) gatewayEnv(cfg *config.Config, custom config.CustomServers, ps paths.Paths) *gateway.Env {
	return &gateway.Env{Docker: a.docker(), Paths: ps, Config: cfg, Custom: custom, MCPHome: a.mcpHome(),
		Secrets: func(ctx context.Context, u *gateway.Union, cat *catalog.Catalog) (gateway.Secrets, error) {
			return a.gatewaySecrets(ctx, ps, u, cat)
		},
		Progress: a.progressf, Now: a.Now,
		Warn: func(w gateway.Warning) {
			hint := "run `abox up` in a project of the profile to build the netd image the probe runs in"
			if w.Finding != nil {
				hint = remedy.Finding(w.Finding.Kind)
			}
			a.warnf(hint, "%s", w.Message)
		},
	}
}

// reconcileGateway brings the profile's gateway in line with its registry ([gateway.Reconcile])
// and reports what it did. prefer is a netd image to probe from.
func (a *App) reconcileGateway(ctx context.Context, profile string, force bool, prefer string) error {
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return err
	}
	res, err := gateway.Reconcile(ctx, a.gatewayEnv(cfg, custom, ps), profile, gateway.ReconcileOptions{Force: force, Prefer: prefer})
	if err != nil {
		return remedy.Gateway(err, profile)
	}
	fmt.Fprintln(a.Out, res)
	return nil
}
