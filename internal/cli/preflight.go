package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/termtext"
)

// preflighted is what a run starts from once every check passed.
type preflighted struct {
	runSpec  *render.RunSpec
	baseline []byte
	gateway  netip.AddrPort // where netd reaches the gateway; zero without MCP servers
}

// preflight checks, before anything is started, that the sandbox about to run is the approved
// one: the manifest unchanged since `abox up`, the artifacts as rendered and current, netd's MCP
// narrowing closed to other projects' tools, the images and network present. With
// bypassPermissions, every boundary check of doctor must pass too.
func (a *App) preflight(ctx context.Context, p *project) (*preflighted, error) {
	if _, err := agentIdentity(p); err != nil { // root's workspace: the first thing to fix
		return nil, err
	}
	if err := a.checkApproved(p); err != nil {
		return nil, err
	}
	if err := checkAgentIdentity(p); err != nil {
		return nil, err
	}
	if err := a.checkArtifacts(p); err != nil {
		return nil, err
	}
	rs, err := artifact.ReadRunSpec(p.state)
	if err != nil {
		return nil, withHint(err, "run `abox up`")
	}
	np, err := readNetdPolicy(p.state.Artifacts())
	if err != nil {
		return nil, err
	}
	if np.Model != nil {
		if err := checkCredential(p); err != nil {
			return nil, err
		}
	}
	var gwAddr netip.AddrPort
	var gw *docker.Container
	if np.MCP != nil {
		gw, err = a.gatewayManager().Inspect(ctx, rs.Profile)
		if err != nil {
			return nil, err
		}
		if err := a.checkMCPScope(p, rs.Profile, np, gw); err != nil {
			return nil, err
		}
		if err := checkGatewayUp(rs.Profile, gw); err != nil {
			return nil, err
		}
		if gwAddr, err = gatewayAddress(gw, rs.Profile, rs.Network, np.MCP.Upstream); err != nil {
			return nil, err
		}
	}
	if rs.Permission == manifest.ModeBypass {
		if err := a.checkBoundary(ctx, p); err != nil {
			return nil, err
		}
	}
	if err := a.checkNetdBinary(ctx, rs.Netd.Image); err != nil {
		return nil, err
	}
	if gw != nil { // probed from the netd image, which must exist first
		if err := a.checkGatewayAuth(ctx, p, rs, gw); err != nil {
			return nil, err
		}
	}
	if ok, err := a.docker().ImageExists(ctx, rs.Agent.Image); err != nil {
		return nil, err
	} else if !ok {
		return nil, errorf("run `abox up` to build it", "image %s is missing", rs.Agent.Image)
	}
	if _, err := a.docker().NetworkInspect(ctx, rs.Network); err != nil {
		return nil, errorf("run `abox up` to create it", "network %s: %v", rs.Network, err)
	}
	for _, dir := range p.manifest.Mounts.Context {
		path := paths.ExpandHome(dir, a.getenv("HOME"))
		if st, err := os.Stat(path); err != nil || !st.IsDir() {
			return nil, errorf("create it, or remove it from mounts.context and run `abox up`", "context directory %s does not exist", path)
		}
	}
	return &preflighted{runSpec: rs, baseline: policy.ExpectedRuleset(np.ServingUID()), gateway: gwAddr}, nil
}

// gatewayAddress is where netd will dial the gateway: the container's address on the sandbox's
// network and the port of netd's upstream URL. Without one the agent's MCP tools cannot work,
// and netd never looks the gateway up by name, so the run is refused.
func gatewayAddress(gw *docker.Container, profile, network, upstream string) (netip.AddrPort, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("netd policy: mcp upstream %q: %w", upstream, err)
	}
	port, _ := strconv.Atoi(u.Port())
	addr, err := gateway.Address(gw, network, port)
	if err != nil {
		return netip.AddrPort{}, withHint(err, "recreate it with `abox gateway up --force "+profile+"`")
	}
	return addr, nil
}

// checkAgentIdentity refuses a run whose agent would not be the workspace's owner any more (the
// project was chowned since `abox up`, or agent.uid changed), or could not create files in the
// workspace: such an agent can only fail, and git in it would distrust the repository.
func checkAgentIdentity(p *project) error {
	id, err := agentIdentity(p)
	if err != nil {
		return err
	}
	rs, err := artifact.ReadRunSpec(p.state)
	if err != nil {
		return withHint(err, "run `abox up`")
	}
	built, ok := rs.AgentIdentity()
	if !ok {
		return errorf("run `abox up` to render it again", "runspec.json gives the agent no numeric --user")
	}
	if built != id {
		return errorf(fmt.Sprintf("run `abox up` to rebuild the sandbox for %s", id),
			"the agent would run as %s, the workspace's owner now, but the sandbox was built for %s", id, built)
	}
	if ok, why := owner.CanWrite(p.state.Workspace, id); !ok {
		return errorf(doctor.CanWriteHint, "%s", termtext.Line(why))
	}
	return nil
}

// checkGatewayUp refuses to start an agent whose MCP servers have no running gateway behind
// netd (gw, nil when there is no container), as after the Docker daemon restarted: every tool
// call would fail inside the run.
func checkGatewayUp(profile string, gw *docker.Container) error {
	if gw == nil || !gw.State.Running {
		return errorf("run `abox up` to start it", "the gateway %s of profile %s is not running, so the agent's MCP tools would fail",
			gateway.Name(profile), profile)
	}
	return nil
}

// checkApproved refuses a manifest changed since `abox up`: the agent can write the workspace,
// so an unapproved manifest could widen the agent's own next run.
func (a *App) checkApproved(p *project) error {
	old, err := os.ReadFile(p.state.Approved())
	if errors.Is(err, fs.ErrNotExist) {
		return errorf("run `abox up` first: it builds the sandbox and approves the manifest", "%s has not been approved by `abox up`", manifest.FileName)
	}
	if err != nil {
		return err
	}
	prev, err := manifest.Parse(old, "approved manifest")
	if err != nil {
		return boundary(errorf("review agentbox.yaml; `abox up` approves it again",
			"the approved manifest %s does not parse, so this one cannot be checked against it: %v", p.state.Approved(), err))
	}
	if sameManifest(prev, p.manifest) {
		return nil
	}
	fmt.Fprintf(a.Err, "agentbox.yaml changed since it was approved by `abox up`:\n%s", termtext.Text(manifest.LineDiff(string(old), string(p.raw))))
	return boundary(errorf("review the change; `abox up` approves it", "refusing to run an unapproved manifest"))
}

func sameManifest(a, b *manifest.Manifest) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// checkArtifacts refuses artifacts that differ from artifacts.json, or that are stale with
// respect to the manifest and configuration.
func (a *App) checkArtifacts(p *project) error {
	mismatches, err := artifact.Verify(p.state)
	if errors.Is(err, artifact.ErrNotRendered) {
		return errorf("run `abox up`", "the project has no rendered artifacts")
	}
	if err != nil {
		return withHint(err, "run `abox up` to render them again")
	}
	if len(mismatches) > 0 {
		return boundary(errorf("run `abox up` to render them again, and `abox doctor` to see what changed them",
			"artifacts differ from artifacts.json: %s", artifact.Describe(mismatches)))
	}
	spec, err := a.spec(p)
	if err != nil {
		return err
	}
	arts, err := render.Render(spec)
	if err != nil {
		return err
	}
	idx, err := artifact.ReadIndex(p.state)
	if err != nil {
		return err
	}
	var stale []string
	for _, art := range arts {
		if f, ok := idx.Files[art.Name]; !art.Review && art.Name != render.IndexName && (!ok || f.SHA256 != render.SHA256(art.Data)) {
			stale = append(stale, art.Name)
		}
	}
	if len(stale) > 0 {
		return errorf("run `abox up` to render and build them", "artifacts are out of date with the manifest or config.yaml: %s", strings.Join(stale, ", "))
	}
	return nil
}

// checkNetdBinary refuses a netd image that is missing or built from another abox binary than
// this one.
func (a *App) checkNetdBinary(ctx context.Context, image string) error {
	img, err := a.docker().ImageInspect(ctx, image)
	if errors.Is(err, docker.ErrNotFound) {
		return errorf("run `abox up` to build it", "image %s is missing", image)
	}
	if err != nil {
		return err
	}
	if img.Labels[binaryLabel] != a.binarySHA256() {
		return errorf("run `abox up` to rebuild it", "image %s holds a different abox binary than this one", image)
	}
	return nil
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

// checkCredential refuses an injected-credential run whose credential netd could not read: the
// secret claude_code.credential names must be a private file of abox's store.
func checkCredential(p *project) error {
	name := p.cfg.ClaudeCode.Credential
	_, err := secrets.CredentialFile(p.paths.SecretsStore(), name)
	if errors.Is(err, secrets.ErrCredentialMissing) {
		return boundary(errorf(fmt.Sprintf("store it with `abox secrets set %s` (an API key, or the token `claude setup-token` prints)", name),
			"claude_code.credential is %q, but %v", name, err))
	}
	if err != nil {
		return boundary(errorf("keep it a regular file of mode 0600: `abox secrets set "+name+"` rewrites it",
			"the Claude credential cannot be handed to netd: %v", err))
	}
	return nil
}
