package render

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
)

// RunToken stands for the run id in runspec.json. abox replaces it, and only it, with the
// 8-hex-digit id of each run.
const RunToken = "@RUN@"

// Fixed paths inside the agent container.
const (
	AgentUser      = "agent"
	AgentHome      = "/home/agent"
	AgentClaudeDir = AgentHome + "/.claude"
	Workspace      = "/workspace"
	AgentArtifacts = "/opt/abox"
	ContextRoot    = "/context"
)

const (
	policyNft  = policy.RulesFile
	policyJSON = policy.File
	resolvConf = "nameserver 127.0.0.1\noptions ndots:0\n"
)

// Claude Code's flags for MCP and settings.
const (
	mcpConfigPath = AgentArtifacts + "/mcp.json"
	settingsPath  = AgentArtifacts + "/settings.json"
)

// Paths in the agent image.
const (
	// ManagedSettings is where Claude Code on Linux reads managed settings, the scope no other
	// overrides; the agent's settings.json is bound there read-only.
	ManagedSettings = "/etc/claude-code/managed-settings.json"
	// ClaudeJSON is Claude Code's global state file outside CLAUDE_CONFIG_DIR. The image makes
	// it a symlink into the ~/.claude volume, so the login's account state persists with it.
	ClaudeJSON = AgentHome + "/.claude.json"
	// RTKPath is where the image installs rtk.
	RTKPath = "/usr/local/bin/rtk"
)

// model holds the values derived from a Spec that several artifacts share.
type model struct {
	s          Spec
	m          *manifest.Manifest
	c          *config.Config
	agentImage string
	netdImage  string
}

func newModel(s Spec) *model { return &model{s: s, m: s.Manifest, c: s.Config} }

// check refuses combinations that validate field by field but cannot be rendered.
func (m *model) check() error {
	if _, ok := m.c.Profiles[m.m.Profile]; !ok {
		return &manifest.Error{Source: manifest.FileName, Problems: []manifest.Problem{{
			Loc: "profile", Msg: fmt.Sprintf("%q is not a profile in config.yaml (known: %s)", m.m.Profile, strings.Join(m.c.ProfileNames(), ", ")),
			Hint: "choose one of them, or add the profile under profiles: in config.yaml",
		}}}
	}
	if err := m.checkReach(); err != nil {
		return err
	}
	if err := m.checkInjected(); err != nil {
		return err
	}
	if err := m.checkServerNetwork(); err != nil {
		return err
	}
	// Validation refuses these already; the check keeps Render total for a spec built in code.
	for i, t := range m.m.Toolchains {
		if r, ok := manifest.Uninstallable[t]; ok {
			return &manifest.Error{Source: manifest.FileName, Problems: []manifest.Problem{{
				Loc: fmt.Sprintf("toolchains[%d]", i), Msg: r.Why, Hint: "remove it from toolchains; " + r.Hint,
			}}}
		}
	}
	return m.checkNarrowing()
}

// checkNarrowing refuses tools: narrowing netd could not enforce. netd attributes a tool to its
// server by the tool lists abox knows; a declared server whose tools nobody lists would let any
// tool name through, including those narrowed out of the other servers.
func (m *model) checkNarrowing() error {
	if len(m.m.Tools) == 0 {
		return nil
	}
	for _, server := range m.m.DeclaredServers() {
		if _, known := m.serverTools(server); !known {
			return &manifest.Error{Source: manifest.FileName, Problems: []manifest.Problem{{
				Loc:  "tools",
				Msg:  fmt.Sprintf("narrowing cannot be enforced while %q has no known tool list: netd could not tell its tools from the narrowed-out ones", server),
				Hint: fmt.Sprintf("narrow %s too (`abox mcp add %s --tool <name>`), or list its tools in custom-servers.yaml", server, server),
			}}}
		}
	}
	return nil
}

// checkReach refuses mounts that would put abox's own state or configuration in the agent's
// reach: the state directory holds the gateway tokens, the authoritative artifacts and the
// approved manifest, the configuration directory says where secrets come from. The agent's uid
// (1000) is often the host user's, so the files' modes would not stop it; a workspace there
// would let it rewrite its own next sandbox. It also refuses context directories that would
// expose a Docker socket (see socketDir), and ~ when the home directory is unknown, which would
// otherwise mount a path relative to /.
func (m *model) checkReach() error {
	guarded := []struct{ what, dir string }{
		{"abox's state directory", m.s.Paths.State},
		{"abox's configuration directory", m.s.Paths.Config},
	}
	for _, g := range guarded {
		if g.dir != "" && overlaps(m.s.Project.Workspace, g.dir) {
			return fmt.Errorf("the workspace %s overlaps %s %s: the agent could rewrite its own sandbox; "+
				"move the project, or set ABOX_STATE_HOME and ABOX_CONFIG_HOME outside it", m.s.Project.Workspace, g.what, g.dir)
		}
	}
	var problems []manifest.Problem
	for i, p := range m.m.Mounts.Context {
		loc := fmt.Sprintf("mounts.context[%d]", i)
		if strings.HasPrefix(p, "~") && !path.IsAbs(m.s.Home) {
			problems = append(problems, manifest.Problem{Loc: loc, Msg: fmt.Sprintf("%q starts with ~, but the home directory is unknown", p),
				Hint: "set HOME, or write an absolute path"})
			continue
		}
		src := m.contextSource(p)
		for _, g := range guarded {
			if g.dir != "" && overlaps(src, g.dir) {
				problems = append(problems, manifest.Problem{Loc: loc, Msg: fmt.Sprintf("%q overlaps %s %s", p, g.what, g.dir),
					Hint: "mount a narrower directory that holds none of abox's state or configuration"})
				break
			}
		}
		if dir, ok := m.socketDir(src); ok {
			problems = append(problems, manifest.Problem{Loc: loc, Msg: fmt.Sprintf("%q would mount %s, where a Docker socket lives", p, dir),
				Hint: "a read-only mount does not stop a socket from being used: mount another directory"})
		}
	}
	if len(problems) > 0 {
		return &manifest.Error{Source: manifest.FileName, Problems: problems}
	}
	return nil
}

// socketDir reports whether src is, holds or sits inside a directory where the Docker socket
// lives (Docker Engine's /run and /var/run, rootless Engine's /run/user/<uid>, Docker Desktop's
// ~/.docker/run), or is itself a socket's conventional *.sock path. A read-only bind does not
// stop connect(2) on a socket, and the docker socket is root on the host. Symlinks are not
// resolved here (rendering does no I/O).
func (m *model) socketDir(src string) (string, bool) {
	dirs := []string{"/run", "/var/run"}
	if path.IsAbs(m.s.Home) {
		dirs = append(dirs, path.Join(m.s.Home, ".docker"))
	}
	for _, d := range dirs {
		if overlaps(src, d) {
			return d, true
		}
	}
	return src, strings.HasSuffix(src, ".sock")
}

// overlaps reports whether one of the absolute paths a and b is, or is inside, the other.
func overlaps(a, b string) bool {
	a, b = path.Clean(a), path.Clean(b)
	within := func(child, parent string) bool {
		return child == parent || parent == "/" || strings.HasPrefix(child, parent+"/")
	}
	return within(a, b) || within(b, a)
}

// names of the run's resources; the run id is RunToken.
func (m *model) netdName() string  { return "abox-netd-" + m.m.Project + "-" + RunToken }
func (m *model) agentName() string { return "agent-" + m.m.Project + "-" + RunToken }

// ClaudeVolume is the per-project volume holding the agent's ~/.claude.
func ClaudeVolume(hash string) string { return "abox-claude-" + hash }

// CacheVolume is the volume of one of a project's toolchain caches (mounts.caches).
func CacheVolume(hash, cache string) string { return "abox-cache-" + hash + "-" + cache }

// CacheDirs are where each toolchain cache lives in the agent's home: the directories
// scratchEnv points the toolchains at (npm_config_cache, GOPATH, CARGO_HOME) and pip's default.
var CacheDirs = map[string]string{
	manifest.CacheNPM:   AgentHome + "/.cache/npm",
	manifest.CacheGo:    AgentHome + "/.cache/go",
	manifest.CachePip:   AgentHome + "/.cache/pip",
	manifest.CacheCargo: AgentHome + "/.cache/cargo",
}

// cacheMounts are the volumes of the project's toolchain caches, in mounts.caches' order.
func (m *model) cacheMounts() []Mount {
	var out []Mount
	for _, c := range m.m.Mounts.Caches {
		out = append(out, Mount{Type: "volume", Source: CacheVolume(m.s.Project.Hash, c), Target: CacheDirs[c]})
	}
	return out
}

// GatewayName is the container name of a profile's gateway.
func GatewayName(profile string) string { return "abox-gw-" + profile }

func (m *model) labels(role string) map[string]string {
	return map[string]string{
		"abox.managed": "true",
		"abox.role":    role,
		"abox.project": m.m.Project,
		"abox.profile": m.m.Profile,
		"abox.hash":    m.s.Project.Hash,
		"abox.run":     RunToken,
	}
}

// egressList is the allowlist netd enforces: the manifest's entries, then the mandatory hosts.
func (m *model) egressList() (entries, mandatory []string) {
	seen := map[string]bool{}
	addTo := func(dst *[]string, h string) {
		e, err := egress.Parse(h)
		if err != nil || seen[e.String()] {
			return
		}
		seen[e.String()] = true
		*dst = append(*dst, e.String())
	}
	for _, h := range m.m.Egress {
		addTo(&entries, h)
	}
	for _, h := range m.Mandatory() {
		addTo(&mandatory, h)
	}
	return append(entries, mandatory...), mandatory
}

// Mandatory returns the hosts abox adds to every allowlist for this project. In injected-credential
// mode the model API's host is not among them: the agent reaches the API through netd's
// forwarder only, so it cannot talk to the API directly with a key of its own (say, to upload
// the workspace into an account it controls).
func (m *model) Mandatory() []string {
	out := append([]string{}, config.BaseMandatory...)
	out = append(out, m.c.Defaults.EgressMandatory...)
	if m.m.Run.Connectors {
		out = append(out, config.ConnectorsHost)
	}
	if cc := m.c.ClaudeCode; cc.Injected() {
		if u, err := policy.ModelUpstream(cc.Upstream()); err == nil {
			out = slices.DeleteFunc(out, func(h string) bool { return h == u.Hostname() })
		}
	}
	return out
}

// contextMounts maps mounts.context to read-only binds under /context, with unique targets. A
// host directory listed twice (~/notes and /home/me/notes/) is mounted once.
func (m *model) contextMounts() []Mount {
	used, mounted := map[string]bool{}, map[string]bool{}
	var out []Mount
	for _, p := range m.m.Mounts.Context {
		src := m.contextSource(p)
		if mounted[src] {
			continue
		}
		mounted[src] = true
		base := path.Base(src)
		if base == "/" || base == "." {
			base = "root"
		}
		name := base
		for i := 2; used[name]; i++ {
			name = base + "-" + strconv.Itoa(i)
		}
		used[name] = true
		out = append(out, Mount{Type: "bind", Source: src, Target: ContextRoot + "/" + name, ReadOnly: true})
	}
	return out
}

// contextSource is the cleaned host path of a mounts.context entry, with ~ expanded.
func (m *model) contextSource(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = path.Join(m.s.Home, strings.TrimPrefix(p, "~"))
	}
	return path.Clean(p)
}

// agentEnv is the agent's non-secret environment.
func (m *model) agentEnv() map[string]string {
	env := map[string]string{}
	for k, v := range m.c.AgentEnv {
		env[k] = v
	}
	if m.m.Run.Connectors {
		env["ENABLE_CLAUDEAI_MCP_SERVERS"] = "true"
	}
	env["ABOX_PROJECT"] = m.m.Project
	env["ABOX_PROFILE"] = m.m.Profile
	env["ABOX_RUN"] = RunToken
	env["CLAUDE_CONFIG_DIR"] = AgentClaudeDir
	for k, v := range m.injectedEnv() {
		env[k] = v
	}
	return env
}

// checkInjected refuses, in injected-credential mode, a secret attached to the agent under one of
// the variables Claude Code takes a credential from: the agent would hold a real one.
func (m *model) checkInjected() error {
	if !m.c.ClaudeCode.Injected() {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m.m.EnvSecrets)) {
		if slices.Contains(config.ClaudeCredentialEnv, k) {
			return &manifest.Error{Source: manifest.FileName, Problems: []manifest.Problem{{
				Loc:  manifest.KeyLoc("env_secrets", k),
				Msg:  fmt.Sprintf("%q would hand the agent a credential, and claude_code.credential is injected by netd", k),
				Hint: fmt.Sprintf("take it back with `abox secrets detach %s`", k),
			}}}
		}
	}
	return nil
}

// injectedEnv is what points the agent at netd's model forwarder in injected-credential mode:
// the forwarder as the API's base URL and a placeholder key, which netd replaces. Nothing
// else of the credential is in the agent's reach. Empty in login-volume mode.
func (m *model) injectedEnv() map[string]string {
	if !m.c.ClaudeCode.Injected() {
		return nil
	}
	return map[string]string{
		"ANTHROPIC_BASE_URL": fmt.Sprintf("http://127.0.0.1:%d", policy.ModelPort),
		"ANTHROPIC_API_KEY":  policy.CredentialPlaceholder,
	}
}

// claudeArgs is the agent's command before the per-run part (-p, --resume, the prompt).
func (m *model) claudeArgs() []string {
	a := []string{"claude", "--output-format", m.m.Run.Output}
	if m.m.Run.Output == "stream-json" {
		a = append(a, "--verbose")
	}
	a = append(a, "--permission-mode", m.m.Run.PermissionMode, "--settings", settingsPath, "--mcp-config", mcpConfigPath)
	if !m.m.Run.Connectors {
		a = append(a, "--strict-mcp-config")
	}
	return a
}

func (m *model) agentFiles() []File {
	files := append([]File{}, m.s.CACerts...)
	// A native binary is staged too, but its sha256 comes from the release's manifest at build
	// time unless config.yaml pins it; its version is in the Dockerfile either way.
	if cc := m.c.ClaudeCode; cc.Source == config.SourceFile || cc.Source == config.SourceNative && cc.SHA256 != "" {
		files = append(files, File{Name: "claude", SHA256: cc.SHA256})
	}
	if r := m.c.RTK; r.Enabled && r.Source == config.SourceFile {
		files = append(files, File{Name: "rtk", SHA256: r.SHA256})
	}
	return files
}
