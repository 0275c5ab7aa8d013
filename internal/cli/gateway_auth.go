package cli

import (
	"context"
	"errors"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

// openGatewayHint is the fix for a gateway that does not enforce its token.
func openGatewayHint(profile string) string {
	return "pin a gateway that enforces its token (docker/mcp-gateway v0.43.1 or later) with `abox gateway update`, then `abox gateway up --force " +
		profile + "`; until then `abox gateway down " + profile + "` stops this one"
}

// checkGatewayAuth refuses to start an agent behind a gateway that has not been seen to refuse
// requests without its token ([gateway.Manager.ProveAuth]).
func (a *App) checkGatewayAuth(ctx context.Context, p *project.Project, rs *render.RunSpec, gw *docker.Container) error {
	err := a.gatewayManager().ProveAuth(ctx, p.Paths.Gateway(rs.Profile), rs.Profile, rs.Network, rs.Netd.Image,
		p.Config.Profiles[rs.Profile].Port, gw)
	var te *gateway.TokenError
	var ae *gateway.AuthError
	switch {
	case errors.As(err, &te):
		return boundary(withHint(err, "run `abox up` to mint it and start the gateway"))
	case errors.As(err, &ae):
		return boundary(explainAuth(err, rs.Profile))
	}
	return err
}

// explainAuth attaches the fix to an error of [gateway.Manager.CheckAuth].
func explainAuth(err error, profile string) error {
	var open *gateway.OpenError
	var ue *gateway.UnhealthyError
	switch {
	case errors.As(err, &open):
		return withHint(err, openGatewayHint(profile))
	case errors.As(err, &ue) && ue.Unauthorized:
		return withHint(err, "the gateway holds another token; recreate it with `abox gateway up --force "+profile+"`")
	case errors.Is(err, docker.ErrNotFound):
		return withHint(err, "run `abox up` to build the netd image the probe runs in")
	}
	return withHint(err, "`abox gateway status "+profile+"` shows its health; `abox gateway up --force "+profile+"` recreates it")
}
