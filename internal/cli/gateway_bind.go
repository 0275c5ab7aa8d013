package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
)

// bindProject records in the profile's registry what the project asks of its gateway, and
// mints the profile's token, which netd mounts, when the project declares a server.
//
// The registry decides what `gateway up` starts, and the workspace manifest can be rewritten by
// the agent. So unless approved is set (up, which has just approved p.manifest), a project with
// an approval is bound with its approved manifest, not with a workspace copy that differs.
func (a *App) bindProject(p *project, approved bool) error {
	m := p.manifest
	if !approved && !p.approvedHere {
		switch ap, err := approval.Load(p.state); {
		case err == nil:
			m = ap.Manifest
		case !errors.Is(err, approval.ErrNotApproved):
			return err // a corrupt approval binds nothing and is refused (exit 3)
		}
	}
	b := gateway.NewBinding(p.ws, m, p.custom)
	if b.Declares() {
		if err := gateway.EnsureToken(p.paths.Gateway(m.Profile)); err != nil {
			return err
		}
	}
	left, err := gateway.Bind(p.paths.GatewaysDir(), m.Profile, p.state.Hash, b)
	if err != nil {
		return err
	}
	for _, prof := range left {
		a.progressf("%s left the %s gateway; `abox gateway up %s` reconciles it", m.Project, prof, prof)
	}
	return nil
}

// unbindProject removes the project from every registry, and removes a gateway no project
// needs any more.
func (a *App) unbindProject(ctx context.Context, p *project) error {
	from, err := gateway.Unbind(p.paths.GatewaysDir(), p.state.Hash)
	if err != nil {
		return err
	}
	for _, prof := range from {
		reg, err := gateway.LoadRegistry(p.paths.Gateway(prof), prof)
		if err != nil || !reg.Union().Empty() {
			continue
		}
		if removed, err := a.gatewayManager().Down(ctx, prof); err != nil {
			a.warnf("remove it with `abox gateway down "+prof+"`", "removing the unused %s gateway: %v", prof, err)
		} else if removed {
			fmt.Fprintf(a.Out, "removed %s: no project uses it any more\n", gateway.Name(prof))
		}
	}
	return nil
}

func (a *App) gatewayManager() *gateway.Manager {
	m := &gateway.Manager{Docker: a.docker(), Progress: a.progressf, Now: a.Now}
	if ps, err := a.Paths(); err == nil {
		m.GatewaysDir = ps.GatewaysDir() // the gateway's log is shown with its secrets removed
	}
	return m
}

// gatewayPlan computes the profile's gateway from its registry, the host's catalogs and the
// secrets store. mint creates the profile's token when it has none; otherwise a missing token
// is "".
func (a *App) gatewayPlan(ctx context.Context, cfg *config.Config, custom config.CustomServers, ps paths.Paths, profile string, mint bool) (*gateway.Plan, string, error) {
	if _, ok := cfg.Profiles[profile]; !ok {
		return nil, "", errorf("known profiles: "+strings.Join(cfg.ProfileNames(), ", "), "profile %q is not configured in %s", profile, ps.ConfigFile())
	}
	dir := ps.Gateway(profile)
	if mint {
		if err := gateway.EnsureToken(dir); err != nil {
			return nil, "", err
		}
	}
	token, err := gateway.ReadToken(dir)
	if err != nil && (mint || !errors.Is(err, fs.ErrNotExist)) {
		return nil, "", err
	}
	reg, err := gateway.LoadRegistry(dir, profile)
	if err != nil {
		return nil, "", err
	}
	cat, err := catalog.Load(a.mcpHome(), custom)
	if err != nil {
		return nil, "", err
	}
	sec, err := a.gatewaySecrets(ctx, ps, reg.Union(), cat)
	if err != nil {
		return nil, "", err
	}
	plan, err := gateway.NewPlan(gateway.PlanInput{Profile: profile, Dir: dir, Config: cfg, Registry: reg,
		Catalog: cat, Custom: custom, Token: token, Secrets: sec})
	return plan, token, err
}

// reconcileGateway brings the profile's gateway in line with its registry: validated, images
// present, created or recreated as needed, probed. prefer is a netd image to probe from.
func (a *App) reconcileGateway(ctx context.Context, profile string, force bool, prefer string) error {
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return err
	}
	unlock, err := gateway.LockProfile(ps.Gateway(profile))
	if err != nil {
		return err
	}
	defer unlock()
	plan, token, err := a.gatewayPlan(ctx, cfg, custom, ps, profile, true)
	if err != nil {
		return err
	}
	if plan.Union.Empty() {
		return a.removeUnused(ctx, profile)
	}
	if err := a.checkLeaks(plan); err != nil {
		return err
	}
	if err := a.checkPlan(plan); err != nil {
		return err
	}
	if err := a.checkGatewaySecrets(plan); err != nil {
		return err
	}
	if err := a.ensureNetwork(ctx, cfg.Network); err != nil {
		return err
	}
	img := a.probeImage(ctx, ps, plan, prefer)
	if img == "" {
		a.warnf("run `abox up` in a project of the profile to build the netd image the probe runs in",
			"the %s gateway will not be probed: no netd image on this machine", plan.Profile)
	}
	mgr := a.gatewayManager()
	out, err := mgr.Up(ctx, plan, gateway.UpOptions{Force: force, Token: token, ProbeImage: img})
	if err != nil {
		return a.explainGateway(ctx, mgr, profile, token, err)
	}
	a.reportGateway(plan, out)
	return nil
}

// removeUnused removes the gateway of a profile none of whose projects declares a server: it
// would serve servers nobody asked for, with the docker socket.
func (a *App) removeUnused(ctx context.Context, profile string) error {
	removed, err := a.gatewayManager().Down(ctx, profile)
	if err != nil {
		return err
	}
	if !removed {
		return errorf("declare one with `abox mcp add SERVER` in a project of the profile", "no project on profile %s declares an MCP server", profile)
	}
	fmt.Fprintf(a.Out, "removed %s: no project on profile %s declares an MCP server\n", gateway.Name(profile), profile)
	return nil
}

// checkPlan prints warnings and refuses a plan with errors: the gateway would start anyway, with
// fewer tools than the projects declare, or abort later.
func (a *App) checkPlan(plan *gateway.Plan) error {
	for _, f := range plan.Findings {
		if !f.Error {
			a.warnf(findingHint(f.Kind), "%s", f.Message)
		}
	}
	errs := plan.Errors()
	if len(errs) == 0 {
		return nil
	}
	hint := "fix the catalog, custom-servers.yaml or the projects' manifests, then run `abox gateway up " + plan.Profile + "`"
	for _, f := range plan.Findings {
		if f.Error {
			hint = findingHint(f.Kind)
			break
		}
	}
	return errorf(hint, "the %s gateway cannot start:\n- %s", plan.Profile, strings.Join(errs, "\n- "))
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

// probeImage returns a netd image to run the health probe in: prefer when it exists, else the
// netd image of any project bound to the profile. "" when there is none.
func (a *App) probeImage(ctx context.Context, ps paths.Paths, plan *gateway.Plan, prefer string) string {
	candidates := []string{prefer}
	reg, err := gateway.LoadRegistry(plan.Dir, plan.Profile)
	if err == nil {
		for _, h := range reg.Hashes() {
			if rs, err := artifact.ReadRunSpec(ps.Project(reg.Projects[h].Workspace)); err == nil {
				candidates = append(candidates, rs.Netd.Image)
			}
		}
	}
	seen := map[string]bool{"": true}
	for _, c := range candidates {
		if seen[c] {
			continue
		}
		seen[c] = true
		if ok, err := a.docker().ImageExists(ctx, c); err == nil && ok {
			return c
		}
	}
	return ""
}

// explainGateway adds what the user needs to an error of gateway.Manager.Up: the gateway's
// log for an unhealthy gateway (token removed), and the command that fixes it.
func (a *App) explainGateway(ctx context.Context, mgr *gateway.Manager, profile, token string, err error) error {
	var ue *gateway.UnhealthyError
	var missing *gateway.ImageMissingError
	var open *gateway.OpenError
	switch {
	case errors.As(err, &open):
		return boundary(withHint(err, openGatewayHint(profile)))
	case errors.As(err, &ue):
		if logs := strings.TrimSpace(mgr.LogsTail(ctx, profile, token, 40)); logs != "" {
			fmt.Fprintf(a.Err, "the last lines of %s's log:\n%s\n", gateway.Name(profile), logs)
		}
		if ue.Unauthorized {
			return withHint(err, "the gateway holds another token; recreate it with `abox gateway up --force "+profile+"`")
		}
		return withHint(err, "read the log above; `abox gateway up --force "+profile+"` recreates the gateway")
	case errors.As(err, &missing):
		return withHint(err, "build or load the image on this machine (`docker image ls` lists them), then retry")
	case errors.Is(err, docker.ErrDaemonUnreachable):
		return withHint(err, "start the Docker daemon, then retry")
	}
	return withHint(err, "retry with `abox gateway up --force "+profile+"`, adding --verbose to see every docker command")
}

// reportGateway prints the result of a reconciliation on stdout.
func (a *App) reportGateway(plan *gateway.Plan, out *gateway.Outcome) {
	what := map[string]string{gateway.Created: "started", gateway.Kept: "unchanged", gateway.Recreated: "recreated"}[out.Action]
	if len(out.Reasons) > 0 {
		what += " (" + strings.Join(out.Reasons, "; ") + ")"
	}
	health := "not probed"
	if out.Probe != nil {
		health = "healthy, " + plural(len(out.Probe.Tools), "tool", "tools")
	}
	fmt.Fprintf(a.Out, "gateway %s: %s; %s; %s at %s\n", gateway.Name(plan.Profile), what,
		plural(len(plan.Container.Servers), "server", "servers"), health, plan.URL())
}
