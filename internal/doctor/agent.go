package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/secrets"
)

func agentNoDockerSock(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invNoDockerSock, true)
}

func agentNoPublishedPorts(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invNoPublishedPorts, true)
}

func agentNotPrivileged(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invNotPrivileged, true)
}

func agentCapabilities(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invAgentCaps, true)
}

func agentNoNewPrivileges(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invNoNewPrivileges, true)
}

func agentUser(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invAgentUser, true)
}

func agentNetwork(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invAgentNetwork, true)
}

func agentLoginCheck(ctx context.Context, e *Env) Finding {
	return e.audit(ctx, invLoginCheck, false)
}

// agentImage: the agent image the runspec names exists; runs never pull or build.
func agentImage(ctx context.Context, e *Env) Finding {
	rs, err := e.runSpec()
	if err != nil {
		return notRendered(err)
	}
	if f, ok := e.needDaemon(ctx); !ok {
		return f
	}
	img, err := e.image(ctx, rs.Agent.Image)
	switch {
	case errors.Is(err, docker.ErrNotFound):
		return failf("run `abox up` to build it", "%s is not built", rs.Agent.Image)
	case err != nil:
		return failf("check `docker image inspect "+rs.Agent.Image+"`, then run `abox doctor` again", "%s: %v", rs.Agent.Image, err)
	}
	return okf("%s (%s)", rs.Agent.Image, shortID(img.ID))
}

// imagesBasePinned: the FROM of both rendered Dockerfiles names exactly one image (a digest
// or a local image id), so a moved tag cannot change what the next build installs.
func imagesBasePinned(_ context.Context, e *Env) Finding {
	var bases, unpinned []string
	for _, name := range []string{render.AgentDockerfile, render.NetdDockerfile} {
		data, err := e.artifactFile(name)
		if err != nil {
			return notRendered(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if from, ok := strings.CutPrefix(line, "FROM "); ok {
				from = strings.Fields(from)[0]
				bases = append(bases, from)
				if !config.IsPinned(from) {
					unpinned = append(unpinned, name+": "+from)
				}
			}
		}
	}
	if len(unpinned) > 0 {
		return warnf("pin image.base in config.yaml as repo@sha256:<digest> (or a local image id), then run `abox up`",
			"built from a tag, which can move: %s", strings.Join(unpinned, ", ")).with("bases", bases)
	}
	return okf("%s", firstN(slices.Compact(bases), 2)).with("bases", bases)
}

// cacheOf is the toolchain cache whose directory is target, or "".
func cacheOf(target string) string {
	for name, dir := range render.CacheDirs {
		if dir == target {
			return name
		}
	}
	return ""
}

// isolatedMountProblems checks the /workspace mount of an isolated run, which replaces the
// live workspace's: the run's own clone in the project's state, and nothing else.
func isolatedMountProblems(e *Env, rs *render.RunSpec) []string {
	var out []string
	if !slices.Contains(manifest.Workspaces, rs.Workspace) {
		out = append(out, fmt.Sprintf("workspace is %q, not one of %s", rs.Workspace, strings.Join(manifest.Workspaces, ", ")))
	}
	m := parseMount(rs.Isolated)
	want := path.Join(e.Project.Clones(), render.RunToken)
	if m.typ != "bind" || path.Clean(m.source) != want || m.source != want || m.target != render.Workspace || m.readOnly {
		out = append(out, fmt.Sprintf("an isolated run would mount %s (only the run's clone %s at %s)", rs.Isolated, want, render.Workspace))
	}
	return out
}

// agentMounts: the agent mounts the workspace, its project's ~/.claude volume, its artifacts,
// its settings (again, as Claude Code's managed settings) and resolv.conf read-only, and
// read-only context directories — nothing else, and nothing of abox's state or configuration
// beyond its own read-only artifacts.
func agentMounts(_ context.Context, e *Env) Finding {
	s, err := e.sandboxArgs()
	if err != nil {
		return notRendered(err)
	}
	return problems(agentMountProblems(e, s), invariantHint,
		fmt.Sprintf("%d mounts, each expected (runspec.json)", len(s.agent.mounts)))
}

func agentMountProblems(e *Env, s *sandboxArgs) []string {
	art := e.Project.Artifacts()
	out := isolatedMountProblems(e, s.rs)
	for _, m := range s.agent.mounts {
		src := path.Clean(m.source)
		switch {
		case m.typ == "bind" && m.target == render.Workspace && src == e.Project.Workspace:
			if overlaps(src, e.Paths.State) || overlaps(src, e.Paths.Config) {
				out = append(out, "the workspace overlaps abox's state or configuration: "+m.raw)
			}
			continue // the one writable bind: the point of the sandbox
		case m.typ == "volume" && m.target == render.AgentClaudeDir:
			if m.source != render.ClaudeVolume(e.Project.Hash) {
				out = append(out, fmt.Sprintf("~/.claude is volume %q, not this project's %s", m.source, render.ClaudeVolume(e.Project.Hash)))
			}
			continue
		case m.typ == "volume" && cacheOf(m.target) != "":
			if want := render.CacheVolume(e.Project.Hash, cacheOf(m.target)); m.source != want {
				out = append(out, fmt.Sprintf("the %s cache is volume %q, not this project's %s", cacheOf(m.target), m.source, want))
			}
			continue
		case m.typ != "bind":
			out = append(out, "unexpected mount "+m.raw)
			continue
		}
		expected := (m.target == render.AgentArtifacts && src == path.Join(art, render.AgentDir)) ||
			(m.target == render.ManagedSettings && src == path.Join(art, render.AgentDir, "settings.json")) ||
			(m.target == "/etc/resolv.conf" && src == path.Join(art, render.ResolvConf))
		switch {
		case expected && !m.readOnly:
			out = append(out, "artifacts mounted writable: "+m.raw)
		case expected:
		case overlaps(src, e.Paths.State) || overlaps(src, e.Paths.Config):
			out = append(out, "gives the agent abox's state or configuration: "+m.raw)
		case strings.HasPrefix(m.target, render.ContextRoot+"/") && !m.readOnly:
			out = append(out, "context mounted writable: "+m.raw)
		case strings.HasPrefix(m.target, render.ContextRoot+"/"):
		default:
			out = append(out, "unexpected mount "+m.raw)
		}
	}
	return out
}

// overlaps reports whether one of the absolute paths a and b is, or is inside, the other.
func overlaps(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	a, b = path.Clean(a), path.Clean(b)
	in := func(c, p string) bool { return c == p || p == "/" || strings.HasPrefix(c, p+"/") }
	return in(a, b) || in(b, a)
}

// agentSingleMCPEndpoint: Claude Code gets one MCP configuration, strictly, so no other server
// (a project .mcp.json, a user's) can be added; claude.ai connectors are a second path, off
// unless run.connectors.
func agentSingleMCPEndpoint(_ context.Context, e *Env) Finding {
	s, err := e.sandboxArgs()
	if err != nil {
		return notRendered(err)
	}
	cmd := s.rs.Agent.Command
	var bad []string
	if n := countFlag(cmd, "--mcp-config"); n != 1 || flagValue(cmd, "--mcp-config") != render.AgentArtifacts+"/mcp.json" {
		bad = append(bad, fmt.Sprintf("claude gets --mcp-config %d time(s), %q", n, flagValue(cmd, "--mcp-config")))
	}
	strict := slices.Contains(cmd, "--strict-mcp-config")
	connectors := slices.Contains(s.agent.env, "ENABLE_CLAUDEAI_MCP_SERVERS=true")
	if !strict && !connectors {
		bad = append(bad, "no --strict-mcp-config")
	}
	if len(bad) > 0 {
		return failf(invariantHint, "%s", strings.Join(bad, "; "))
	}
	if connectors {
		return warnf("set run.connectors: false in agentbox.yaml and run `abox up` to keep one MCP path",
			"not one endpoint: netd's forwarder, and claude.ai connectors through %s (run.connectors), which abox neither mediates nor logs; no --strict-mcp-config",
			config.ConnectorsHost).with("connectors", true)
	}
	return okf("one MCP configuration, --strict-mcp-config")
}

func countFlag(args []string, flag string) int {
	n := 0
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			n++
		}
	}
	return n
}

func flagValue(args []string, flag string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// agentMCPForwarder: mcp.json names netd's forwarder on loopback and nothing else, with no
// header; no file the agent can read holds the profile's gateway token.
func agentMCPForwarder(_ context.Context, e *Env) Finding {
	data, err := e.artifactFile(render.AgentDir + "/mcp.json")
	if err != nil {
		return notRendered(err)
	}
	var doc struct {
		Servers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return failf("run `abox render`", "mcp.json does not decode: %v", err)
	}
	want := fmt.Sprintf("http://127.0.0.1:%d/mcp", policy.MCPPort)
	var bad []string
	for name, srv := range doc.Servers {
		if srv["url"] != want || len(srv) != 2 || srv["type"] != "http" {
			bad = append(bad, fmt.Sprintf("server %q is not just {type: http, url: %s}", name, want))
		}
	}
	if len(doc.Servers) > 1 {
		bad = append(bad, fmt.Sprintf("%d servers, want at most one", len(doc.Servers)))
	}
	if lower := bytes.ToLower(data); bytes.Contains(lower, []byte("authorization")) || bytes.Contains(lower, []byte("bearer")) {
		bad = append(bad, "mcp.json carries an Authorization header")
	}
	bad = append(bad, e.tokenLeaks()...)
	if len(bad) > 0 {
		return failf("run `abox render`; the agent must never hold the gateway token", "%s", strings.Join(bad, "; "))
	}
	if len(doc.Servers) == 0 {
		return okf("no MCP server declared; mcp.json is empty")
	}
	return okf("only %s, no credential", want)
}

// tokenLeaks names agent-readable artifacts and runspec arguments that hold the profile's
// gateway token. The token itself is never reported.
func (e *Env) tokenLeaks() []string {
	profile := e.profile()
	if profile == "" {
		return nil
	}
	token, err := os.ReadFile(filepath.Join(e.Paths.Gateway(profile), "token"))
	token = bytes.TrimSpace(token)
	if err != nil || len(token) < 8 {
		return nil
	}
	var out []string
	dir := filepath.Join(e.Project.Artifacts(), render.AgentDir)
	entries, _ := os.ReadDir(dir)
	for _, d := range entries {
		if data, err := os.ReadFile(filepath.Join(dir, d.Name())); err == nil && bytes.Contains(data, token) {
			out = append(out, "the agent's "+d.Name()+" holds the gateway token")
		}
	}
	if rs, err := e.runSpec(); err == nil && strings.Contains(strings.Join(rs.Agent.Argv(), "\x00"), string(token)) {
		out = append(out, "the agent's argv holds the gateway token")
	}
	return out
}

// agentEnvSecrets: the agent holds no secret value abox did not attach — the runspec passes
// only non-secret environment values, and neither it nor any artifact the agent reads holds the
// gateway token — and the secrets it was attached are in the store, since the run refuses to
// start without them. Attached secrets are a warning on every run: the agent can read and send
// them anywhere the allowlist reaches, and `docker inspect` of the agent shows them.
func agentEnvSecrets(ctx context.Context, e *Env) Finding {
	s, err := e.sandboxArgs()
	if err != nil {
		return notRendered(err)
	}
	var bad []string
	attachedMap := e.attachedMap()
	for _, kv := range s.agent.env {
		k, _, _ := strings.Cut(kv, "=")
		if attachedMap[k] != "" || (e.Manifest != nil && e.Manifest.EnvSecrets[k] != "") {
			bad = append(bad, "runspec.json passes attached secret "+k+" on the argv")
		}
	}
	bad = append(bad, e.tokenLeaks()...)
	attached := e.attachedSecrets()
	if len(bad) > 0 {
		return problems(bad, "run `abox render`; secrets reach the agent only through `abox secrets attach`, never the argv", "").with("attached", attached)
	}
	if len(attached) == 0 {
		return okf("no secret value in the argv or the agent's artifacts; none attached").with("attached", attached)
	}
	if missing := e.attachedMissing(ctx, attachedMap); len(missing) > 0 {
		env, name, _ := strings.Cut(missing[0], "←")
		return failf(fmt.Sprintf("store it with `abox secrets set %s`, or take it back with `abox secrets detach %s`", name, env),
			"attached but not in the store, so `abox run` refuses to start: %s", strings.Join(missing, ", ")).with("attached", attached).with("missing", missing)
	}
	return warnf(fmt.Sprintf("the agent can read, print and send them to %s — keep the egress list tight (`abox egress list`), "+
		"and expect them in `docker inspect` of the agent container; `abox secrets detach <ENV>` takes one back", domainsText(e.allowedCount())),
		"the agent holds secrets in its environment: %s: %s", plural(len(attached), "secret", "secrets"), strings.Join(attached, ", ")).
		with("attached", attached).with("allowed_domains", e.allowedCount())
}

// attachedMap is env_secrets (variable → secret) of the approved manifest when there is one
// (what runs), else the workspace's.
func (e *Env) attachedMap() map[string]string {
	m := e.approvedManifest()
	if m == nil {
		m = e.Manifest
	}
	if m == nil {
		return map[string]string{}
	}
	return m.EnvSecrets
}

// attachedSecrets lists env_secrets as "ENV←secret", from the approved manifest when there is
// one (what runs), else the workspace's.
func (e *Env) attachedSecrets() []string {
	m := e.approvedManifest()
	if m == nil {
		m = e.Manifest
	}
	out := []string{}
	if m == nil {
		return out
	}
	for _, k := range slices.Sorted(maps.Keys(m.EnvSecrets)) {
		out = append(out, k+"←"+m.EnvSecrets[k])
	}
	return out
}

// agentAuthCredential: the Claude credential is this project's own volume, mounted only in the
// agent at ~/.claude, and exists. That the agent can read it is a residual risk.
func agentAuthCredential(ctx context.Context, e *Env) Finding {
	s, err := e.sandboxArgs()
	if err != nil {
		return notRendered(err)
	}
	vol := render.ClaudeVolume(e.Project.Hash)
	var bad []string
	if s.rs.ClaudeVol != vol {
		bad = append(bad, fmt.Sprintf("runspec.json names volume %q, not this project's %s", s.rs.ClaudeVol, vol))
	}
	for _, m := range s.netd.mounts {
		if m.source == vol {
			bad = append(bad, "netd mounts the credential volume")
		}
	}
	store := e.Paths.SecretsStore()
	for _, m := range s.agent.mounts {
		if m.source == store || strings.HasPrefix(m.source, store+"/") || m.target == policy.CredentialFile {
			bad = append(bad, "the agent mounts "+m.source+" from abox's secret store")
		}
	}
	injected := ""
	for _, m := range s.netd.mounts {
		if m.target == policy.CredentialFile {
			injected = strings.TrimPrefix(m.source, store+"/")
		}
	}
	if len(bad) > 0 {
		return failf(invariantHint, "%s", strings.Join(bad, "; "))
	}
	if injected != "" {
		if _, err := secrets.CredentialFile(store, injected); err != nil {
			return failf("store it with `abox secrets set "+injected+"`", "injected credential: %v", err)
		}
		return okf("injected: netd adds secret %q to the agent's model requests; the agent holds a placeholder, and %s only its sessions", injected, vol).
			with("mode", "injected").with("secret", injected).with("volume", vol)
	}
	if !e.daemonUp(ctx) || e.Docker == nil {
		return okf("%s at %s (per project)", vol, render.AgentClaudeDir)
	}
	if _, err := e.Docker.VolumeInspect(ctx, vol); errors.Is(err, docker.ErrNotFound) {
		return warnf("run `abox up` to create it, then `abox shell` once to log Claude Code in", "volume %s does not exist", vol)
	}
	return okf("%s at %s (per project; see residual risks)", vol, render.AgentClaudeDir).with("volume", vol)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
