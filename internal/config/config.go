package config

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// Config is config.yaml.
type Config struct {
	Network     string             `yaml:"network"`
	Image       Image              `yaml:"image"`
	ClaudeCode  ClaudeCode         `yaml:"claude_code"`
	Gateway     Gateway            `yaml:"gateway"`
	Profiles    map[string]Profile `yaml:"profiles"`
	EgressPorts []int              `yaml:"egress_ports"`
	AgentEnv    map[string]string  `yaml:"agent_env"`
	Agent       Agent              `yaml:"agent" json:",omitzero"`
	Limits      Limits             `yaml:"limits"`
	RTK         RTK                `yaml:"rtk"`
	Defaults    Defaults           `yaml:"defaults"`
}

// Agent overrides who the agent runs as. By default it is the workspace owner's uid and gid
// (internal/owner); set these for a checkout whose owner is not the right user, such as one owned
// by root on a server. Unset means "the owner's". Neither may be root's (0). (Omitted from JSON
// when unset, so that the digest of a configuration without them stays what it was.)
type Agent struct {
	UID *int `yaml:"uid,omitempty" json:",omitempty"`
	GID *int `yaml:"gid,omitempty" json:",omitempty"`
}

// Image configures the images abox builds.
type Image struct {
	// Base is the FROM of the agent and netd images: a reference, ideally digest-pinned, or a
	// local image id "sha256:<64 hex>".
	Base string `yaml:"base"`
	// CACertificates are host PEM files baked into built images, for hosts behind a
	// TLS-intercepting proxy.
	CACertificates []string `yaml:"ca_certificates,omitempty"`
}

// Claude Code sources.
const (
	SourceNative = "native" // the official binary, version and sha256 verified
	SourceNPM    = "npm"    // @anthropic-ai/claude-code at a pinned version, registry integrity
	SourceFile   = "file"   // a local file with its sha256, for mirrors and air-gapped hosts
)

// ClaudeCode says where the agent image's claude comes from.
type ClaudeCode struct {
	Source  string `yaml:"source"`
	Version string `yaml:"version"`
	// SHA256 is optional for the native source, whose checksum comes from the release's
	// manifest; set, it wins and the manifest is not read (for a mirror of the binaries only).
	SHA256 string `yaml:"sha256,omitempty"`
	Path   string `yaml:"path,omitempty"`
	// ReleaseURL is the base URL of native releases, laid out as the official one is
	// (<base>/<version>/manifest.json, <base>/<version>/<platform>/claude); empty means
	// [DefaultClaudeReleaseURL]. (Omitted from JSON when empty, so that the digest of a
	// configuration without it stays what it was.)
	ReleaseURL string `yaml:"release_url,omitempty" json:",omitempty"`
	// Credential names the secret (`abox secrets set <name>`) holding the Claude credential
	// netd injects: an API key, or the OAuth token `claude setup-token` prints. Set, the agent
	// holds only a placeholder and its ANTHROPIC_BASE_URL is netd's model forwarder; empty, the
	// agent uses the login in its ~/.claude volume. (Omitted from JSON when empty, as above.)
	Credential string `yaml:"credential,omitempty" json:",omitempty"`
	// APIUpstream is where netd forwards model requests in injected mode: an https URL, for a
	// corporate LLM gateway; empty means [policy.DefaultModelUpstream]. Only netd connects to it.
	APIUpstream string `yaml:"api_upstream,omitempty" json:",omitempty"`
	// ServerTools says whether netd forwards, in injected mode, model requests that ask the
	// API's servers to run tools of their own (web search, web fetch, code execution, MCP
	// servers), which reach hosts past the allowlist: [ServerToolsAllow], or
	// [ServerToolsRefuse] (the default, also when empty).
	ServerTools string `yaml:"server_tools,omitempty" json:",omitempty"`
}

// Values of claude_code.server_tools.
const (
	ServerToolsRefuse = "refuse"
	ServerToolsAllow  = "allow"
)

// AllowsServerTools reports whether server-side tools are forwarded in injected mode.
func (c ClaudeCode) AllowsServerTools() bool { return c.ServerTools == ServerToolsAllow }

// ClaudeCredentialEnv are the variables through which Claude Code takes its credential and API
// endpoint. In injected mode abox sets the first two to netd's forwarder and a placeholder, and
// none may come from agent_env or an attached secret: that would hand the agent a credential.
var ClaudeCredentialEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}

// Injected reports whether the Claude credential is injected by netd rather than held by the
// agent.
func (c ClaudeCode) Injected() bool { return c.Credential != "" }

// Upstream returns the model API netd forwards to in injected mode.
func (c ClaudeCode) Upstream() string { return cmp.Or(c.APIUpstream, policy.DefaultModelUpstream) }

// Releases returns the base URL native releases come from.
func (c ClaudeCode) Releases() string { return cmp.Or(c.ReleaseURL, DefaultClaudeReleaseURL) }

// Gateway configures the per-profile MCP gateway.
type Gateway struct {
	Image string `yaml:"image"` // repo@sha256:… or a local image id sha256:<64 hex>
}

// Profile is one gateway profile.
type Profile struct {
	Port        int    `yaml:"port"`
	Description string `yaml:"description,omitempty"`
}

// Limits bound the agent container, what a run may cost netd's log volume, and the walk that
// finds what to mask in the workspace.
type Limits struct {
	Pids   int    `yaml:"pids"`
	Memory string `yaml:"memory"` // docker --memory syntax: 512m, 4g
	CPUs   string `yaml:"cpus,omitempty"`
	// NetdLogs caps each of netd's decision logs of a run (dns, conn, mcp), in the syntax of
	// Memory, from 1m to 16g; empty means netd's default, 256m. (Omitted from JSON when empty,
	// so that the digest of a configuration without it stays what it was.)
	NetdLogs string `yaml:"netd_logs,omitempty" json:",omitempty"`
	// MaskWalk is how many workspace entries abox looks at to find masked paths. A workspace
	// that holds more is refused: what abox did not see, it cannot mask. Nothing rendered
	// depends on it, so it is not part of the digest of the rendered inputs (no JSON).
	MaskWalk int `yaml:"mask_walk" json:"-"`
}

// NetdLogBytes returns NetdLogs in bytes, or 0 (netd's default) when it is empty or not a size;
// Validate reports a size that is not, or is out of bounds.
func (l Limits) NetdLogBytes() int64 {
	n, _ := parseSize(l.NetdLogs)
	return n
}

// RTK configures the optional rtk output filter.
type RTK struct {
	Enabled bool   `yaml:"enabled"`
	Version string `yaml:"version,omitempty"`
	Source  string `yaml:"source,omitempty"` // native or file
	SHA256  string `yaml:"sha256,omitempty"`
	Path    string `yaml:"path,omitempty"`
}

// Defaults are merged into every project.
type Defaults struct {
	Mask            []string `yaml:"mask"`
	Watch           []string `yaml:"watch"`
	EgressMandatory []string `yaml:"egress_mandatory"`
	// Runtime is the agent's runtime for a project whose manifest sets no run.runtime: runc or
	// runsc (manifest.Runtimes); empty means runc. (Omitted from JSON when empty, so that the
	// digest of a configuration without it stays what it was.)
	Runtime string `yaml:"runtime,omitempty" json:",omitempty"`
	// SpareNetd, on unless config.yaml sets it false, has every `abox run` (and `abox up`) start
	// the project's netd for its next run in the background (a spare, used by one run only; see
	// internal/sandbox), so that run does not wait for netd's start-up. Nothing rendered depends
	// on it (no JSON).
	SpareNetd bool `yaml:"spare_netd" json:"-"`
}

// Built-in values.
const (
	DefaultNetwork = "abox-net"
	DefaultProfile = "default"
	DefaultPort    = 8811
	// DefaultBaseImage is Debian 12 slim, pinned by digest.
	DefaultBaseImage = "debian:bookworm-slim@sha256:4b50eb66f977b4062683ff434ef18ac191da862dbe966961bc11990cf5791a8d"
	// DefaultGatewayImage is docker/mcp-gateway, pinned by digest; `abox gateway update`
	// re-resolves it.
	//
	// Which release it is, is not known: it is the digest the original Python abox pinned from
	// the :v2 tag, which upstream moves on every merge to main, and the image reports its
	// version as "HEAD". docker/mcp-gateway before v0.43.1 (2026-06-25) switched the bearer
	// check off whenever DOCKER_MCP_IN_CONTAINER=1, which its own image sets, whatever the
	// token; this digest may be such a build. No digest of v0.43.1 or later could be fetched
	// and checked where this was written (neither Docker Hub nor GitHub is reachable), so none
	// is pinned here on trust. The control is behaviour instead: `abox gateway up`, `abox run`
	// and doctor send an MCP initialize without the token and with a wrong one and refuse a
	// gateway that does not answer both with 401 or 403 (internal/gateway, AuthCheck).
	DefaultGatewayImage = "docker/mcp-gateway@sha256:54dd518ee51b5c4641b02ddd4790b88cc0dafa59d76b6d07bc441d896a23bbea"
	DefaultRTKVersion   = "0.43.0"
	// DefaultMaskWalk is limits.mask_walk unless set: 200000 workspace entries.
	DefaultMaskWalk = 200000
)

// The default Claude Code. The version is the npm registry's answer to `npm view
// @anthropic-ai/claude-code version` on 2026-12-01 (the native releases and the npm package
// share version numbers), and the date its `time` entry for that version: 2026-11-24T22:06:38Z.
// Doctor warns once a pinned version is older than [MaxClaudeAge]; a newer abox moves the
// default.
const (
	DefaultClaudeVersion  = "2.1.332"
	DefaultClaudeReleased = "2026-11-24"
	// DefaultClaudeReleaseURL is where the official installer (claude.ai/install.sh) downloads
	// native releases from.
	DefaultClaudeReleaseURL = "https://downloads.claude.ai/claude-code-releases"
	// MaxClaudeAge is how old a pinned Claude Code may be before doctor warns: it ships several
	// releases a week, and a pin left alone for a quarter misses its fixes.
	MaxClaudeAge = 90 * 24 * time.Hour
)

// BaseMandatory are the hosts Claude Code needs to authenticate; abox always allows them.
// platform.claude.com is where OAuth token refresh goes, so without it a session that works
// today fails whenever the token rolls over.
var BaseMandatory = []string{"api.anthropic.com", "platform.claude.com", "claude.ai", "claude.com"}

// ConnectorsHost is allowed only when a project turns run.connectors on.
const ConnectorsHost = "mcp-proxy.anthropic.com"

// DefaultAgentEnv switches off Claude Code's auto-updater, non-essential traffic and claude.ai
// connectors, so the agent stops retrying hosts abox blocks and the review queue keeps meaning
// something.
func DefaultAgentEnv() map[string]string {
	return map[string]string{
		"DISABLE_AUTOUPDATER":                      "1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"ENABLE_CLAUDEAI_MCP_SERVERS":              "false",
	}
}

// Default returns the configuration abox uses when config.yaml does not exist.
func Default() *Config {
	return &Config{
		Network:     DefaultNetwork,
		Image:       Image{Base: DefaultBaseImage},
		ClaudeCode:  ClaudeCode{Source: SourceNative, Version: DefaultClaudeVersion},
		Gateway:     Gateway{Image: DefaultGatewayImage},
		Profiles:    map[string]Profile{DefaultProfile: {Port: DefaultPort}},
		EgressPorts: []int{443},
		AgentEnv:    DefaultAgentEnv(),
		Limits:      Limits{Pids: 1024, Memory: "4g", MaskWalk: DefaultMaskWalk},
		RTK:         RTK{Version: DefaultRTKVersion, Source: SourceNative},
		Defaults: Defaults{
			Mask: []string{".env*", ".git/hooks"},
			Watch: []string{".github/workflows", ".gitlab-ci.yml", "Makefile", "justfile", "package.json",
				".pre-commit-config.yaml", ".vscode/tasks.json", ".vscode/settings.json", ".vscode/launch.json", ".idea", "*.code-workspace"},
			EgressMandatory: append([]string{}, BaseMandatory...),
			SpareNetd:       true,
		},
	}
}

// ProfileNames returns the profile names, sorted.
func (c *Config) ProfileNames() []string { return slices.Sorted(maps.Keys(c.Profiles)) }

// NextFreePort returns the lowest port from 8811 no profile uses.
func (c *Config) NextFreePort() int {
	used := map[int]bool{}
	for _, p := range c.Profiles {
		used[p.Port] = true
	}
	port := DefaultPort
	for used[port] {
		port++
	}
	return port
}

// DefaultProfile is the profile a new project gets: [DefaultProfile] when it is configured, else
// the first configured one by name.
func (c *Config) DefaultProfile() string {
	if _, ok := c.Profiles[DefaultProfile]; ok {
		return DefaultProfile
	}
	if names := c.ProfileNames(); len(names) > 0 {
		return names[0]
	}
	return DefaultProfile
}
