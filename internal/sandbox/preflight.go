package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/termtext"
)

// The preflight's refusals. Each is matched by a [*Refusal]; cli maps them to a hint and an
// exit status. ErrTampered is a boundary refusal (the sandbox could not be verified); the others
// name something `abox up` or the user must make or fix first. A refusal by the approval
// ([approval.ErrNotApproved], [approval.ErrCorrupt], [*approval.ChangedError]) comes back as
// [approval.Check] returns it.
var (
	ErrRunSpec        = errors.New("runspec.json cannot be read")
	ErrNoAgentUser    = errors.New("runspec.json gives the agent no numeric --user")
	ErrOwnerChanged   = errors.New("the workspace's owner is not the one the sandbox was built for")
	ErrCannotWrite    = errors.New("the agent could not write the workspace")
	ErrNotRendered    = errors.New("the project has no rendered artifacts")
	ErrUnverifiable   = errors.New("the artifacts cannot be checked against artifacts.json")
	ErrTampered       = errors.New("the artifacts differ from artifacts.json")
	ErrStale          = errors.New("the artifacts are out of date")
	ErrNetdPolicy     = errors.New("the netd policy cannot be read")
	ErrGatewayDown    = errors.New("the gateway is not running")
	ErrGatewayAddress = errors.New("the gateway has no address on the sandbox's network")
	ErrImageMissing   = errors.New("an image is missing")
	ErrNetdBinary     = errors.New("the netd image holds another abox binary")
	ErrNetworkMissing = errors.New("the network is missing")
	ErrContextMissing = errors.New("a context directory is missing")
	// ErrCredentialMissing and ErrCredentialUnsafe refuse an injected-credential run whose
	// credential abox's store does not hold, or holds where others may read it or a bind would
	// follow a link: netd would have nothing, or something unchecked, to inject.
	ErrCredentialMissing = errors.New("the Claude credential is not stored")
	ErrCredentialUnsafe  = errors.New("the Claude credential's file cannot be handed to netd")
)

// Refusal is a run refused by [Preflight.Run] before anything started. It matches its Kind.
type Refusal struct {
	Kind    error  // one of the Err* sentinels above
	Subject string // what it concerns, for a hint: the identity to rebuild for, the gateway's profile
	Msg     string // what was found
}

func (r *Refusal) Error() string        { return r.Msg }
func (r *Refusal) Is(target error) bool { return target == r.Kind }
func refuse(kind error, subject, format string, args ...any) *Refusal {
	return &Refusal{Kind: kind, Subject: subject, Msg: fmt.Sprintf(format, args...)}
}

// Preflight checks, before anything is started, that the sandbox about to run is the approved
// one: the manifest unchanged since `abox up`, the artifacts as rendered and current, netd's MCP
// narrowing closed to other projects' tools, the images and network present. With
// bypassPermissions, every boundary check of doctor must pass too.
//
// Checks whose rule lives with its own concept (the MCP scope, the gateway's proof of its token,
// doctor's boundary checks) are handed in as functions; their errors come back as they are.
type Preflight struct {
	Docker   *docker.Client
	Gateways *gateway.Manager
	Project  paths.Project
	Manifest *manifest.Manifest // the workspace's, as loaded
	Raw      []byte             // Manifest as read
	Identity render.Identity    // the workspace owner's identity now: who the agent must run as
	// Render renders the artifacts from the manifest and configuration as they are now, to tell
	// stale artifacts.
	Render       func() ([]render.Artifact, error)
	BinarySHA256 string // of this abox binary, which the netd image must hold
	Home         string // for mounts.context
	MCPScope     func(profile string, np *policy.Netd, gw *docker.Container) error
	GatewayAuth  func(ctx context.Context, rs *render.RunSpec, gw *docker.Container) error
	Boundary     func(ctx context.Context) error
	// Credential is claude_code.credential, the secret netd injects in injected mode, and
	// SecretsStore the directory of abox's file store that holds it.
	Credential, SecretsStore string

	ahead *prefetched // inspections started ahead by [Preflight.Prefetch]; nil without one
}

// BinaryLabel is the netd image's label holding the sha256 of the abox binary baked into it.
const BinaryLabel = "abox.binary-sha256"

// Ready is what a run starts from once every check passed.
type Ready struct {
	RunSpec  *render.RunSpec
	Baseline []byte         // the ruleset netd must have loaded
	Gateway  netip.AddrPort // where netd reaches the gateway; zero without MCP servers
	// NetdImageID is the ID of the netd image the preflight checked: a spare netd must have
	// been started from it ([Options.NetdImageID]).
	NetdImageID string
}

// Run runs every check in order and returns the first refusal.
func (p *Preflight) Run(ctx context.Context) (*Ready, error) {
	if _, err := approval.Check(p.Project, p.Manifest, p.Raw); err != nil {
		return nil, err
	}
	rs, err := p.runSpec()
	if err != nil {
		return nil, err
	}
	if err := p.checkIdentity(rs); err != nil {
		return nil, err
	}
	if err := p.checkArtifacts(); err != nil {
		return nil, err
	}
	if rs, err = p.runSpec(); err != nil { // read again: now verified against artifacts.json
		return nil, err
	}
	np, err := p.netdPolicy()
	if err != nil {
		return nil, err
	}
	if np.Model != nil {
		if err := p.checkCredential(); err != nil {
			return nil, err
		}
	}
	var gwAddr netip.AddrPort
	var gw *docker.Container
	if np.MCP != nil {
		if gw, gwAddr, err = p.checkGateway(ctx, rs, np); err != nil {
			return nil, err
		}
	}
	if rs.Permission == manifest.ModeBypass && p.Boundary != nil {
		if err := p.Boundary(ctx); err != nil {
			return nil, err
		}
	}
	netdImage, err := p.checkNetdBinary(ctx, rs.Netd.Image)
	if err != nil {
		return nil, err
	}
	if gw != nil && p.GatewayAuth != nil { // probed from the netd image, which must exist first
		if err := p.GatewayAuth(ctx, rs, gw); err != nil {
			return nil, err
		}
	}
	if err := p.checkHost(ctx, rs); err != nil {
		return nil, err
	}
	return &Ready{RunSpec: rs, Baseline: policy.ExpectedRuleset(np.ServingUID()), Gateway: gwAddr, NetdImageID: netdImage}, nil
}

func (p *Preflight) runSpec() (*render.RunSpec, error) {
	rs, err := artifact.ReadRunSpec(p.Project)
	if err != nil {
		return nil, refuse(ErrRunSpec, "", "%v", err)
	}
	return rs, nil
}

// checkIdentity refuses a run whose agent would not be the workspace's owner any more (the
// project was chowned since `abox up`, or agent.uid changed), or could not create files in the
// workspace: such an agent can only fail, and git in it would distrust the repository.
func (p *Preflight) checkIdentity(rs *render.RunSpec) error {
	built, ok := rs.AgentIdentity()
	if !ok {
		return refuse(ErrNoAgentUser, "", "runspec.json gives the agent no numeric --user")
	}
	if id := p.Identity; built != id {
		return refuse(ErrOwnerChanged, id.String(),
			"the agent would run as %s, the workspace's owner now, but the sandbox was built for %s", id, built)
	}
	if ok, why := owner.CanWrite(p.Project.Workspace, p.Identity); !ok {
		return refuse(ErrCannotWrite, "", "%s", termtext.Line(why))
	}
	return nil
}

// checkArtifacts refuses artifacts that differ from artifacts.json, or that are stale with
// respect to the manifest and configuration.
func (p *Preflight) checkArtifacts() error {
	mismatches, err := artifact.Verify(p.Project)
	if errors.Is(err, artifact.ErrNotRendered) {
		return refuse(ErrNotRendered, "", "the project has no rendered artifacts")
	}
	if err != nil {
		return refuse(ErrUnverifiable, "", "%v", err)
	}
	if len(mismatches) > 0 {
		return refuse(ErrTampered, "", "artifacts differ from artifacts.json: %s", artifact.Describe(mismatches))
	}
	arts, err := p.Render()
	if err != nil {
		return err
	}
	idx, err := artifact.ReadIndex(p.Project)
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
		return refuse(ErrStale, "", "artifacts are out of date with the manifest or config.yaml: %s", strings.Join(stale, ", "))
	}
	return nil
}

// netdPolicy reads and validates the rendered netd.json.
func (p *Preflight) netdPolicy() (*policy.Netd, error) {
	data, err := os.ReadFile(filepath.Join(p.Project.Artifacts(), render.NetdDir, policy.File))
	if err != nil {
		return nil, refuse(ErrNetdPolicy, "", "reading the netd policy: %v", err)
	}
	return policy.Parse(data)
}

// checkGateway finds the gateway netd will forward MCP to: inside the project's scope, running,
// and with an address on the sandbox's network.
func (p *Preflight) checkGateway(ctx context.Context, rs *render.RunSpec, np *policy.Netd) (*docker.Container, netip.AddrPort, error) {
	gw, err := p.gatewayInspect(ctx, rs.Profile)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	if p.MCPScope != nil {
		if err := p.MCPScope(rs.Profile, np, gw); err != nil {
			return nil, netip.AddrPort{}, err
		}
	}
	if gw == nil || !gw.State.Running { // as after the Docker daemon restarted
		return nil, netip.AddrPort{}, refuse(ErrGatewayDown, rs.Profile,
			"the gateway %s of profile %s is not running, so the agent's MCP tools would fail", gateway.Name(rs.Profile), rs.Profile)
	}
	addr, err := gatewayAddress(gw, rs.Profile, rs.Network, np.MCP.Upstream)
	return gw, addr, err
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
		return netip.AddrPort{}, refuse(ErrGatewayAddress, profile, "%v", err)
	}
	return addr, nil
}

// checkNetdBinary refuses a netd image that is missing or built from another abox binary than
// this one, and returns the image's ID.
func (p *Preflight) checkNetdBinary(ctx context.Context, image string) (string, error) {
	img, err := p.imageInspect(ctx, image)
	if errors.Is(err, docker.ErrNotFound) {
		return "", refuse(ErrImageMissing, image, "image %s is missing", image)
	}
	if err != nil {
		return "", err
	}
	if img.Labels[BinaryLabel] != p.BinarySHA256 {
		return "", refuse(ErrNetdBinary, image, "image %s holds a different abox binary than this one", image)
	}
	return img.ID, nil
}

// checkHost refuses a run whose agent image, network or context directories are missing.
func (p *Preflight) checkHost(ctx context.Context, rs *render.RunSpec) error {
	if _, err := p.imageInspect(ctx, rs.Agent.Image); errors.Is(err, docker.ErrNotFound) {
		return refuse(ErrImageMissing, rs.Agent.Image, "image %s is missing", rs.Agent.Image)
	} else if err != nil {
		return err
	}
	if _, err := p.networkInspect(ctx, rs.Network); err != nil {
		return refuse(ErrNetworkMissing, rs.Network, "network %s: %v", rs.Network, err)
	}
	if missing := MissingContext(p.Manifest, p.Home); len(missing) > 0 {
		return refuse(ErrContextMissing, missing[0], "context directory %s does not exist", missing[0])
	}
	return nil
}

// MissingContext returns the context directories of m (mounts.context, ~ expanded with home)
// that are not directories on the host: a run refuses the first ([ErrContextMissing]), and
// `abox render` warns of each.
func MissingContext(m *manifest.Manifest, home string) []string {
	var out []string
	for _, dir := range m.Mounts.Context {
		path := paths.ExpandHome(dir, home)
		if st, err := os.Stat(path); err != nil || !st.IsDir() {
			out = append(out, path)
		}
	}
	return out
}

// checkCredential refuses an injected-credential run whose credential netd could not read: the
// secret claude_code.credential names must be a private regular file of abox's store.
func (p *Preflight) checkCredential() error {
	_, err := secrets.CredentialFile(p.SecretsStore, p.Credential)
	switch {
	case errors.Is(err, secrets.ErrCredentialMissing):
		return refuse(ErrCredentialMissing, p.Credential, "claude_code.credential is %q, but %v", p.Credential, err)
	case err != nil:
		return refuse(ErrCredentialUnsafe, p.Credential, "the Claude credential cannot be handed to netd: %v", err)
	}
	return nil
}
