package doctor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// profile is the project's profile: from the rendered runspec, else the manifest.
func (e *Env) profile() string {
	if rs, err := e.runSpec(); err == nil {
		return rs.Profile
	}
	if e.Manifest != nil {
		return e.Manifest.Profile
	}
	return ""
}

// needsGateway reports whether the project declares MCP servers: the rendered netd policy
// forwards to a gateway, else the manifest declares some.
func (e *Env) needsGateway() bool {
	if p, err := e.netdPolicy(); err == nil {
		return p.MCP != nil
	}
	return e.Manifest != nil && len(e.Manifest.DeclaredServers()) > 0
}

// gateway inspects the profile's gateway container. A missing one is an error matching
// docker.ErrNotFound.
func (e *Env) gateway(ctx context.Context) (*docker.Container, string, error) {
	name := render.GatewayName(e.profile())
	if !e.daemonUp(ctx) {
		return nil, name, errNoDocker
	}
	c, err := e.inspect(ctx, name)
	return c, name, err
}

// liveGateway returns the gateway container, or a finding and false when there is none to look
// at (no daemon, no gateway); a missing gateway is only skipped here, gateway.running fails it.
func (e *Env) liveGateway(ctx context.Context) (*docker.Container, Finding, bool) {
	if f, ok := e.needDaemon(ctx); !ok {
		return nil, f, false
	}
	c, name, err := e.gateway(ctx)
	switch {
	case errors.Is(err, docker.ErrNotFound) && !e.needsGateway():
		return nil, skipf("", "the project declares no MCP server, and no %s runs", name), false
	case errors.Is(err, docker.ErrNotFound):
		return nil, skipf("", "%s does not exist (see gateway.running)", name), false
	case err != nil:
		return nil, failf("check `docker container inspect "+name+"`, then run `abox doctor` again", "inspecting %s: %v", name, err), false
	}
	return c, Finding{}, true
}

// gatewayImagePinned: config.yaml pins the gateway image by digest, and a running gateway was
// created from that pinned reference. It is the one container that mounts docker.sock.
func gatewayImagePinned(ctx context.Context, e *Env) Finding {
	if e.Config == nil {
		return skipf("fix config.yaml first (see manifest.schema)", "config.yaml did not load")
	}
	pin := e.Config.Gateway.Image
	if !config.IsPinned(pin) {
		return failf("run `abox gateway update` to resolve the tag to a digest and pin it",
			"gateway.image %q is not pinned by digest", pin)
	}
	if !e.daemonUp(ctx) {
		return okf("%s", pin)
	}
	c, name, err := e.gateway(ctx)
	if err == nil && c.Config.Image != pin {
		return failf("recreate it with `abox up --force-gateway`", "%s was created from %q, not the pinned %q", name, c.Config.Image, pin).
			with("running", c.Config.Image).with("pinned", pin)
	}
	return okf("%s", pin).with("pinned", pin)
}

// gatewayImageDigest: the image the gateway container runs is the pinned digest, read from the
// daemon's RepoDigests rather than from any name.
func gatewayImageDigest(ctx context.Context, e *Env) Finding {
	if e.Config == nil {
		return skipf("fix config.yaml first (see manifest.schema)", "config.yaml did not load")
	}
	c, f, ok := e.liveGateway(ctx)
	if !ok {
		return f
	}
	pin := e.Config.Gateway.Image
	if strings.HasPrefix(pin, "sha256:") {
		if c.Image == pin {
			return okf("runs image %s", pin)
		}
		return failf("recreate it with `abox up --force-gateway`", "runs image %s, not the pinned %s", c.Image, pin)
	}
	_, digest, _ := strings.Cut(pin, "@")
	img, err := e.image(ctx, c.Image)
	if err != nil {
		return failf("check `docker image inspect "+c.Image+"`, then run `abox doctor` again", "inspecting the gateway's image: %v", err)
	}
	for _, rd := range img.RepoDigests {
		if _, d, _ := strings.Cut(rd, "@"); d == digest {
			return okf("runs %s", rd).with("digest", digest)
		}
	}
	return failf("recreate it with `abox up --force-gateway`; `abox gateway update` if the pin itself is stale",
		"runs image %s with digests %s, not the pinned %s", c.Image, firstN(img.RepoDigests, 3), digest).
		with("repo_digests", img.RepoDigests).with("pinned", digest)
}

// gatewayRunning: the profile's gateway runs when the project declares MCP servers.
func gatewayRunning(ctx context.Context, e *Env) Finding {
	if !e.needsGateway() {
		return skipf("", "the project declares no MCP server")
	}
	if f, ok := e.needDaemon(ctx); !ok {
		return f
	}
	c, name, err := e.gateway(ctx)
	switch {
	case errors.Is(err, docker.ErrNotFound):
		return failf("run `abox up` to start it", "%s does not exist", name)
	case err != nil:
		return failf("check `docker container inspect "+name+"`, then run `abox doctor` again", "inspecting %s: %v", name, err)
	case !c.State.Running:
		return failf("run `abox up --force-gateway` to recreate it", "%s is %s", name, c.State.Status)
	}
	return okf("%s is running", name)
}

// gatewayNoPublishedPorts: the gateway publishes nothing on the host; agents reach it only
// through netd on the bridge.
func gatewayNoPublishedPorts(ctx context.Context, e *Env) Finding {
	c, f, ok := e.liveGateway(ctx)
	if !ok {
		return f
	}
	if pub := publishedPorts(c); len(pub) > 0 {
		return failf("recreate it with `abox up --force-gateway`", "%s", strings.Join(pub, ", ")).with("published", pub)
	}
	return okf("nothing published")
}

// gatewayVerifySignatures: the gateway verifies the signatures of the images it runs (its
// arguments are all there is to read for that), and requires its bearer token, which is not
// read from its arguments but proven: a probe from the netd image on the gateway's network
// initializes MCP with the token, then without it and with a wrong one, and both of those must
// be refused (docker/mcp-gateway before v0.43.1 ignored the token in a container).
func gatewayVerifySignatures(ctx context.Context, e *Env) Finding {
	c, f, ok := e.liveGateway(ctx)
	if !ok {
		return f
	}
	var bad []string
	verify := false
	for _, a := range c.Args {
		switch {
		case a == "--verify-signatures" || a == "--verify-signatures=true":
			verify = true
		case a == "--verify-signatures=false":
			bad = append(bad, a)
		case strings.HasPrefix(a, "--allow-unauthenticated"):
			bad = append(bad, a+" (no bearer token required)")
		}
	}
	if !verify && len(bad) == 0 {
		bad = append(bad, "--verify-signatures missing")
	}
	auth, hint, err := e.gatewayAuth(ctx)
	if err != nil {
		return failf(hint, "%s", strings.Join(append(bad, err.Error()), "; ")).with("problems", append(bad, err.Error()))
	}
	return problems(bad, "recreate it with `abox up --force-gateway`", "--verify-signatures; "+auth).with("auth", auth)
}

// gatewayAuth proves, by probing it, that the profile's gateway refuses MCP requests without
// its token and answers with it. It returns what the probe saw, or an error with its fix.
func (e *Env) gatewayAuth(ctx context.Context) (string, string, error) {
	profile := e.profile()
	rs, err := e.runSpec()
	if err != nil || e.Config == nil {
		return "", "run `abox up`", errors.New("the token is not proven: nothing rendered to probe from")
	}
	token, err := gateway.ReadToken(e.Paths.Gateway(profile))
	if err != nil {
		return "", "run `abox up` to mint it", fmt.Errorf("the token is not proven: the profile's token cannot be read (%v)", err)
	}
	if _, err := e.image(ctx, rs.Netd.Image); err != nil {
		return "", "run `abox up` to build the netd image the probe runs in", errors.New("the token is not proven: no netd image to probe from")
	}
	fmt.Fprintf(e.progress(), "probing the %s gateway's token check\n", profile)
	m := &gateway.Manager{Docker: e.Docker}
	res, err := m.CheckAuth(ctx, profile, rs.Network, rs.Netd.Image, e.Config.Profiles[profile].Port, token)
	var open *gateway.OpenError
	switch {
	case errors.As(err, &open):
		return "", "pin a gateway that enforces its token (docker/mcp-gateway v0.43.1 or later) with `abox gateway update`, then `abox up --force-gateway`",
			errors.New(gateway.Redact(err.Error(), token))
	case err != nil:
		return "", "`abox gateway status` shows its health; `abox up --force-gateway` recreates it",
			errors.New("the token is not proven: " + gateway.Redact(err.Error(), token))
	}
	return fmt.Sprintf("refuses requests without its token (%d) and with a wrong one (%d)", res.Auth.NoToken, res.Auth.WrongToken), "", nil
}

// publishedPorts lists a container's host port bindings as "host:port->container".
func publishedPorts(c *docker.Container) []string {
	var out []string
	seen := map[string]bool{}
	add := func(port string, bs []docker.PortBinding) {
		for _, b := range bs {
			s := b.HostIP + ":" + b.HostPort + "->" + port
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	for port, bs := range c.HostConfig.PortBindings {
		add(port, bs)
	}
	for port, bs := range c.NetworkSettings.Ports {
		add(port, bs)
	}
	sort.Strings(out)
	return out
}

// gatewayServersEnded: no MCP server container outlives its run ([gateway.Servers.Orphans]): the
// gateway stops a session's containers when the run's netd closes the session, and abox removes
// what it leaves after every run; one left here holds its server's secrets and network with
// no run to serve.
func gatewayServersEnded(ctx context.Context, e *Env) Finding {
	if e.Config == nil {
		return skipf("fix config.yaml first (see manifest.schema)", "config.yaml did not load")
	}
	if f, ok := e.needDaemon(ctx); !ok {
		return f
	}
	sv := gateway.Servers{Docker: e.Docker, Network: e.Config.Network, Idle: func() ([]string, error) { return sandbox.IdleSpares(e.Paths.State) }}
	orphans, err := sv.Orphans(ctx)
	if err != nil {
		return failf("check `docker ps --filter label="+gateway.ServerLabel+"=true`, then run `abox doctor` again", "%v", err)
	}
	if len(orphans) == 0 {
		return okf("every MCP server container on %s belongs to a live run", e.Config.Network)
	}
	var names []string
	for _, o := range orphans {
		names = append(names, fmt.Sprintf("%s (server %s, since %s)", o.Name, o.Server, o.Created.Format("2006-01-02 15:04:05")))
	}
	return failf("`abox gateway up` removes them, as the end of the next run does",
		"%d MCP server container(s) outlived their run: %s", len(orphans), firstN(names, 4)).with("orphans", orphans)
}
