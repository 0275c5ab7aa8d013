package cli

import (
	"context"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/render"
)

// checkGatewayAuth refuses to start an agent behind a gateway that has not been seen to refuse
// requests without its token ([gateway.Manager.ProveAuth]).
func (a *App) checkGatewayAuth(ctx context.Context, p *project.Project, rs *render.RunSpec, gw *docker.Container) error {
	err := a.gatewayManager().ProveAuth(ctx, p.Paths.Gateway(rs.Profile), rs.Profile, rs.Network, rs.Netd.Image,
		p.Config.Profiles[rs.Profile].Port, gw)
	return remedy.GatewayAuth(err, rs.Profile)
}
