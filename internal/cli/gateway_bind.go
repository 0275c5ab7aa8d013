package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
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
				hint = findingHint(w.Finding.Kind)
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
		return a.explainGateway(err, profile)
	}
	fmt.Fprintln(a.Out, res)
	return nil
}

// explainGateway adds what the user needs to an error of the gateway package: the hint that
// fixes it and, for a gateway that does not answer, its log (token removed). An error it does
// not know stays as it is.
func (a *App) explainGateway(err error, profile string) error {
	var up *gateway.UpError
	var unknown *gateway.UnknownProfileError
	var unused *gateway.UnusedError
	var leak *gateway.LeakError
	var plan *gateway.PlanError
	var sec *gateway.SecretsError
	switch {
	case errors.As(err, &up):
		return a.explainUp(up)
	case errors.As(err, &unknown):
		return withHint(err, "known profiles: "+strings.Join(unknown.Known, ", "))
	case errors.As(err, &unused):
		return withHint(err, "declare one with `abox mcp add SERVER` in a project of the profile")
	case errors.As(err, &leak):
		return withHint(err, leakHint(leak.Leaks[0]))
	case errors.As(err, &plan):
		hint := "fix the catalog, custom-servers.yaml or the projects' manifests, then run `abox gateway up " + plan.Profile + "`"
		if plan.Kind != "" {
			hint = findingHint(plan.Kind)
		}
		return withHint(err, hint)
	case errors.As(err, &sec):
		return withHint(err, fmt.Sprintf("store it with `abox secrets set %s` (or map it in secrets.yaml and run `abox secrets sync`), then run this again", sec.Secret()))
	}
	return err
}

// explainUp adds the fix to an error of [gateway.Manager.Up], and prints the log of a gateway
// that does not answer.
func (a *App) explainUp(up *gateway.UpError) error {
	profile := up.Profile
	var ue *gateway.UnhealthyError
	var missing *gateway.ImageMissingError
	var open *gateway.OpenError
	switch {
	case errors.As(up, &open):
		return boundary(withHint(up, openGatewayHint(profile)))
	case errors.As(up, &ue):
		if up.Log != "" {
			fmt.Fprintf(a.Err, "the last lines of %s's log:\n%s\n", gateway.Name(profile), up.Log)
		}
		if ue.Unauthorized {
			return withHint(up, "the gateway holds another token; recreate it with `abox gateway up --force "+profile+"`")
		}
		return withHint(up, "read the log above; `abox gateway up --force "+profile+"` recreates the gateway")
	case errors.As(up, &missing):
		return withHint(up, "build or load the image on this machine (`docker image ls` lists them), then retry")
	case errors.Is(up, docker.ErrDaemonUnreachable):
		return withHint(up, "start the Docker daemon, then retry")
	}
	return withHint(up, "retry with `abox gateway up --force "+profile+"`, adding --verbose to see every docker command")
}

func findingHint(k catalog.Kind) string {
	switch k {
	case catalog.Unknown:
		return "list known servers with `abox mcp list --all`, define it in custom-servers.yaml, or remove it with `abox mcp rm`"
	case catalog.ToolCollision:
		return "give one entry a prefix: in its catalog, or remove one of the servers with `abox mcp rm`"
	case catalog.UnpinnedSigned, catalog.Unpinned:
		return "pin the image as repo@sha256:<digest> in its catalog entry"
	case catalog.LocalImage:
		return "pin it as repo@sha256:<digest> and drop pin: false in custom-servers.yaml to have it verified and pulled"
	default:
		return "install the Docker MCP Toolkit catalog, or set ABOX_DOCKER_MCP_HOME to where it is"
	}
}
