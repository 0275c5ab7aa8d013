package manifest

import (
	"maps"
	"slices"
)

// FileName is the manifest's file name in the workspace root.
const FileName = "agentbox.yaml"

// Version is the only manifest version this abox reads.
const Version = 1

// Manifest is agentbox.yaml.
type Manifest struct {
	Version       int                     `yaml:"version"`
	Project       string                  `yaml:"project"`
	Profile       string                  `yaml:"profile"`
	Servers       []string                `yaml:"servers,omitempty"`
	RemoteServers map[string]RemoteServer `yaml:"remote_servers,omitempty"`
	Tools         map[string][]string     `yaml:"tools,omitempty"`
	ServerNetwork map[string]string       `yaml:"server_network,omitempty"`
	Toolchains    []string                `yaml:"toolchains,omitempty"`
	Mounts        Mounts                  `yaml:"mounts,omitempty"`
	Egress        []string                `yaml:"egress,omitempty"`
	EgressIgnored []string                `yaml:"egress_ignored,omitempty"`
	EnvSecrets    map[string]string       `yaml:"env_secrets,omitempty"`
	Run           Run                     `yaml:"run,omitempty"`
}

// RemoteServer is an internet-hosted MCP server reached through the gateway.
type RemoteServer struct {
	URL         string            `yaml:"url"`
	Transport   string            `yaml:"transport,omitempty"`
	Headers     map[string]string `yaml:"headers,omitempty"`
	Secrets     []SecretEnv       `yaml:"secrets,omitempty"`
	Description string            `yaml:"description,omitempty"`
}

// SecretEnv maps a stored secret to the environment variable a server reads it from.
type SecretEnv struct {
	Name string `yaml:"name"`
	Env  string `yaml:"env"`
}

// Mounts says which workspace paths are masked, which are watched, and which host directories
// are mounted read-only as context.
type Mounts struct {
	Mask    []string `yaml:"mask,omitempty"`
	Watch   []string `yaml:"watch,omitempty"`
	Context []string `yaml:"context,omitempty"`
	// Caches are toolchain caches (npm, go, pip, cargo) kept in volumes of the project's own
	// between runs, so that a second run's dependency install does not download again. Opt-in:
	// like the workspace, they carry what one run's agent wrote into the next run. (Omitted
	// from JSON when unset, so that the digest of a manifest without them stays what it was.)
	Caches []string `yaml:"caches,omitempty" json:",omitempty"`
}

// The toolchain caches mounts.caches can name.
const (
	CacheNPM   = "npm"
	CacheGo    = "go"
	CachePip   = "pip"
	CacheCargo = "cargo"
)

// Caches are the values of mounts.caches.
var Caches = []string{CacheNPM, CacheGo, CachePip, CacheCargo}

// Run configures how `abox run` starts Claude Code.
type Run struct {
	PermissionMode string `yaml:"permission_mode,omitempty"`
	Output         string `yaml:"output,omitempty"`
	Connectors     bool   `yaml:"connectors,omitempty"`
	Timeout        int    `yaml:"timeout,omitempty"` // seconds
	// OnExecChange says what a run that changed an execution-adjacent file or the git state
	// does: warn (list the changes in its summary) or fail (list them and exit non-zero).
	OnExecChange string `yaml:"on_exec_change,omitempty"`
	// Runtime is the OCI runtime the agent container runs under: runc, or runsc (gVisor), which
	// puts gVisor's kernel between the agent and the host's. Unset means config.yaml's
	// defaults.runtime, else runc. netd always runs under runc: it needs the host's nftables.
	// (Omitted from JSON when unset, so that the digest of a manifest without it stays what it was.)
	Runtime string `yaml:"runtime,omitempty" json:",omitempty"`
	// Workspace is what the agent sees at /workspace: live, the user's checkout itself (the
	// default), or isolated, a private git clone of it per run that the user reviews and merges
	// (internal/isolate). `abox run --isolated` picks isolated for one run. (Omitted from JSON
	// when unset, like Runtime.)
	Workspace string `yaml:"workspace,omitempty" json:",omitempty"`
}

// Permission modes Claude Code accepts.
const (
	ModeDefault     = "default"
	ModeAcceptEdits = "acceptEdits"
	ModeBypass      = "bypassPermissions"
	ModePlan        = "plan"
)

// Known values.
var (
	PermissionModes = []string{ModeDefault, ModeAcceptEdits, ModeBypass, ModePlan}
	Outputs         = []string{"stream-json", "json", "text"}
	Transports      = []string{"streamable-http", "sse"}
	Toolchains      = []string{"python", "go", "node", "rust", "java", "ruby", "php", "dotnet"}
	ServerNetworks  = []string{"shared", "none"}
	OnExecChanges   = []string{ExecChangeWarn, ExecChangeFail}
	Runtimes        = []string{RuntimeRunc, RuntimeRunsc}
	Workspaces      = []string{WorkspaceLive, WorkspaceIsolated}
)

// Values of run.workspace.
const (
	WorkspaceLive     = "live"     // /workspace is the user's checkout
	WorkspaceIsolated = "isolated" // /workspace is the run's private clone
)

// Values of run.runtime.
const (
	RuntimeRunc  = "runc"  // Docker's default: the agent's syscalls reach the host's kernel
	RuntimeRunsc = "runsc" // gVisor: the agent's syscalls reach gVisor's kernel, in user space
)

// Uninstallable are the [Toolchains] abox knows (detection recognises their projects, and a
// manifest may name them) but cannot install in the agent image, each with the reason and what
// to do instead. Rendering refuses them; `abox init` never proposes them.
var Uninstallable = map[string]Refusal{
	"dotnet": {
		Why:  "abox cannot install dotnet: .NET is not in the Debian archive abox installs toolchains from",
		Hint: "set image.base in config.yaml to a Debian-based image with .NET installed, and allow its package feed with `abox egress add api.nuget.org`",
	},
}

// Installable returns the [Toolchains] abox can install: all but the [Uninstallable] ones.
func Installable() []string {
	return slices.DeleteFunc(slices.Clone(Toolchains), func(t string) bool { _, no := Uninstallable[t]; return no })
}

// Refusal is why a value is refused and what to do instead.
type Refusal struct{ Why, Hint string }

// Values of run.on_exec_change.
const (
	ExecChangeWarn = "warn"
	ExecChangeFail = "fail"
)

// Defaults.
const (
	DefaultOutput    = "stream-json"
	DefaultTimeout   = 3600
	DefaultTransport = "streamable-http"
	MinTimeout       = 30
	MaxTimeout       = 86400
)

// WithDefaults returns m with unset optional fields filled in. It does not change the receiver.
func (m Manifest) WithDefaults() Manifest {
	if m.Version == 0 {
		m.Version = Version
	}
	if m.Run.PermissionMode == "" {
		m.Run.PermissionMode = ModeDefault
	}
	if m.Run.Output == "" {
		m.Run.Output = DefaultOutput
	}
	if m.Run.Timeout == 0 {
		m.Run.Timeout = DefaultTimeout
	}
	if m.Run.OnExecChange == "" {
		m.Run.OnExecChange = ExecChangeWarn
	}
	if len(m.RemoteServers) > 0 {
		rs := make(map[string]RemoteServer, len(m.RemoteServers))
		for k, r := range m.RemoteServers {
			if r.Transport == "" {
				r.Transport = DefaultTransport
			}
			rs[k] = r
		}
		m.RemoteServers = rs
	}
	return m
}

// DeclaredServers returns servers and remote servers, in declaration order then sorted remote
// names.
func (m *Manifest) DeclaredServers() []string {
	out := append([]string{}, m.Servers...)
	return append(out, slices.Sorted(maps.Keys(m.RemoteServers))...)
}

// IsDeclared reports whether name is a declared server or remote server.
func (m *Manifest) IsDeclared(name string) bool {
	if _, ok := m.RemoteServers[name]; ok {
		return true
	}
	for _, s := range m.Servers {
		if s == name {
			return true
		}
	}
	return false
}
