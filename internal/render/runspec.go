package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
)

// RunSpec is runspec.json: the literal docker argv of a run's two containers. abox executes it
// as written, after replacing [RunToken] with the run id; doctor audits it.
//
// The agent's argv is completed per run, in this order and with nothing else:
//
//	docker <Agent.Args> [--mount <mask>…] <Agent.Image> <Agent.Command> -p [--resume ID | --continue] -- <prompt>
//
// An isolated run ([RunSpec.Workspace], `abox run --isolated`) changes one argument more: the
// value of the agent's first --mount, the live workspace, is replaced by [RunSpec.Isolated]
// with [RunToken] made the run id, the run's private clone; it gets no mask mount, since the
// clone holds no masked path.
//
// The masks are recomputed at every run from mounts.mask, so a file created since the last
// render is masked too. netd's argv is completed only for a project with MCP servers, with the
// gateway container's address as the daemon reports it at that run (the gateway may have been
// recreated since the render):
//
//	docker <Netd.Args> <Netd.Image> <Netd.Command> [--gateway-addr <ip>:<port>]
type RunSpec struct {
	Version    string     `json:"abox_version"`
	Project    string     `json:"project"`
	Profile    string     `json:"profile"`
	Hash       string     `json:"hash"`
	Network    string     `json:"network"`
	RunToken   string     `json:"run_token"`
	ClaudeVol  string     `json:"claude_volume"`
	Netd       RunCommand `json:"netd"`
	Agent      RunCommand `json:"agent"`
	Shell      []string   `json:"shell_command"`
	Masks      []string   `json:"mask_patterns"`
	Watch      []string   `json:"watch_patterns"`
	Permission string     `json:"permission_mode"`
	Timeout    int        `json:"timeout_s"`
	Connectors bool       `json:"connectors"`
	// OnExecChange is run.on_exec_change: warn, or fail, which makes a run that changed an
	// execution-adjacent file or the git state exit non-zero.
	OnExecChange string `json:"on_exec_change"`
	Egress       int    `json:"egress_entries"`
	MCPEndpoint  string `json:"mcp_endpoint"`
	// Reown gives the project's ~/.claude volume to the agent's uid and gid, when they changed
	// since the volume was filled (the workspace changed hands, or agent.uid did): a throwaway
	// container with no network, root with only CAP_CHOWN and CAP_DAC_READ_SEARCH, that follows
	// no symlink. `abox up` runs it; the login in the volume is kept.
	Reown RunCommand `json:"reown"`
	// LoginCheck tests, before a headless run, whether the ~/.claude volume holds a login,
	// without abox ever reading the credential ([LoginCheckCommand]). It is audited like the
	// agent's argv and run as written.
	LoginCheck RunCommand `json:"login_check"`
	// Workspace is run.workspace: live (the user's checkout at /workspace) or isolated (a
	// private clone per run).
	Workspace string `json:"workspace"`
	// Isolated is the agent's /workspace mount in an isolated run: the run's clone in the
	// project's state ([paths.Project.Clone] with [RunToken] for the id), read-write.
	Isolated string `json:"isolated_workspace"`
}

// WorkspaceMount is the agent's /workspace mount of a live run, the first --mount of its argv.
func WorkspaceMount(workspace string) Mount {
	return Mount{Type: "bind", Source: workspace, Target: Workspace}
}

// IsolatedMount is the agent's /workspace mount of an isolated run: clone stands for the run's
// clone, with [RunToken] in place of the id.
func IsolatedMount(clone string) Mount {
	return Mount{Type: "bind", Source: clone, Target: Workspace}
}

// AgentIdentity returns the uid and gid of the agent's --user, as rendered: the identity every
// other container that touches the agent's files (the login check) must run as. ok is false
// when the argv has no numeric --user uid:gid.
func (r RunSpec) AgentIdentity() (id Identity, ok bool) {
	for i := 0; i+1 < len(r.Agent.Args); i++ {
		if r.Agent.Args[i] != "--user" {
			continue
		}
		u, g, found := strings.Cut(r.Agent.Args[i+1], ":")
		uid, err1 := strconv.Atoi(u)
		gid, err2 := strconv.Atoi(g)
		if !found || err1 != nil || err2 != nil {
			return Identity{}, false
		}
		return Identity{UID: uid, GID: gid}, true
	}
	return Identity{}, false
}

// String is "uid:gid".
func (id Identity) String() string { return strconv.Itoa(id.UID) + ":" + strconv.Itoa(id.GID) }

// RunCommand is one container's argv: docker Args… Image Command….
type RunCommand struct {
	Args    []string `json:"args"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
}

// Argv returns the full docker argv.
func (r RunCommand) Argv() []string {
	a := append([]string{}, r.Args...)
	a = append(a, r.Image)
	return append(a, r.Command...)
}

// NetdCaps are the capabilities netd's root supervisor needs: NET_ADMIN to load the ruleset and
// add set elements, SETUID/SETGID to start its serving process as its own uid, and
// DAC_READ_SEARCH to read the profile token, which is private to the host user.
var NetdCaps = []string{"NET_ADMIN", "SETUID", "SETGID", "DAC_READ_SEARCH"}

// NetdSysctls are the kernel settings of netd's network namespace, which the agent joins.
// Docker starts a container's namespace with every port unprivileged
// (ip_unprivileged_port_start=0), so without this the zero-capability agent could bind
// 127.0.0.11:53, or port 53 of any address, and answer what netd asks there. From 1024 on ports
// stay free for the agent's own servers; netd's ports are above and held by netd from the start.
var NetdSysctls = map[string]string{policy.UnprivilegedPortSysctl: strconv.Itoa(policy.UnprivilegedPortStart)}

func (m *model) netdContainer() Container {
	mounts := []Mount{
		{Type: "bind", Source: m.s.Project.Artifacts() + "/" + NetdDir, Target: policy.Dir, ReadOnly: true},
		{Type: "bind", Source: m.s.Project.Artifacts() + "/" + ResolvConf, Target: "/etc/resolv.conf", ReadOnly: true},
		{Type: "volume", Target: policy.LogDir},
	}
	if len(m.m.DeclaredServers()) > 0 {
		mounts = append(mounts, Mount{Type: "bind", Source: m.s.Paths.Gateway(m.m.Profile) + "/token", Target: policy.TokenFile, ReadOnly: true})
	}
	if cc := m.c.ClaudeCode; cc.Injected() {
		// The Claude credential's 0600 file in abox's secret store, for netd's root process
		// only; the agent's container never mounts it.
		mounts = append(mounts, Mount{Type: "bind", Source: m.s.Paths.SecretsStore() + "/" + cc.Credential, Target: policy.CredentialFile, ReadOnly: true})
		for i, f := range m.s.CACerts {
			mounts = append(mounts, Mount{Type: "bind", Source: m.contextSource(m.c.Image.CACertificates[i]), Target: policy.ModelCADir + "/" + f.Name, ReadOnly: true})
		}
	}
	return Container{
		Name:        m.netdName(),
		Network:     m.c.Network,
		CapDrop:     []string{"ALL"},
		CapAdd:      NetdCaps,
		SecurityOpt: []string{"no-new-privileges"},
		Init:        true,
		ReadOnly:    true,
		PidsLimit:   256,
		Memory:      "256m",
		Tmpfs:       []string{"/run:rw,nosuid,nodev,size=1m", "/tmp:rw,nosuid,nodev,noexec,size=16m"},
		Sysctls:     NetdSysctls,
		Mounts:      mounts,
		Labels:      m.labels("netd"),
		Image:       m.netdImage,
		Command:     []string{"netd"},
	}
}

// agentTmpfs are the agent's writable scratch directories. The root filesystem is read-only, so
// nothing the agent writes outside the workspace and its ~/.claude volume lands on the host's
// disk: scratch space lives in memory and counts against the container's memory limit, which
// bounds it. Executables may run from them, as builds and tests do.
func agentTmpfs(id Identity) []string {
	own := fmt.Sprintf("uid=%d,gid=%d", id.UID, id.GID)
	return []string{
		"/tmp:rw,nosuid,nodev,size=1g,mode=1777",
		"/var/tmp:rw,nosuid,nodev,size=256m,mode=1777",
		"/run:rw,nosuid,nodev,size=16m,mode=755",
		AgentHome + "/.cache:rw,nosuid,nodev,size=2g," + own + ",mode=755",
		AgentHome + "/.local:rw,nosuid,nodev,size=512m," + own + ",mode=755",
		AgentHome + "/.config:rw,nosuid,nodev,size=64m," + own + ",mode=755",
	}
}

// scratchEnv points toolchain caches that default to read-only places in the home directory at
// the writable scratch space.
var scratchEnv = map[string]string{
	"GOPATH":           AgentHome + "/.cache/go",
	"CARGO_HOME":       AgentHome + "/.cache/cargo",
	"npm_config_cache": AgentHome + "/.cache/npm",
	"GRADLE_USER_HOME": AgentHome + "/.cache/gradle",
}

// withCacheEnv keeps go's build cache in the go cache's volume too, when there is one (its
// default, ~/.cache/go-build, is scratch space), without overriding what env sets.
func withCacheEnv(env map[string]string, caches []string) map[string]string {
	if _, ok := env["GOCACHE"]; !ok && slices.Contains(caches, manifest.CacheGo) {
		env["GOCACHE"] = CacheDirs[manifest.CacheGo] + "/build"
	}
	return env
}

// withScratchEnv adds scratchEnv to env without overriding what env sets.
func withScratchEnv(env map[string]string) map[string]string {
	for k, v := range scratchEnv {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	return env
}

func (m *model) agentContainer() Container {
	mounts := []Mount{
		WorkspaceMount(m.s.Project.Workspace),
		{Type: "volume", Source: ClaudeVolume(m.s.Project.Hash), Target: AgentClaudeDir},
		{Type: "bind", Source: m.s.Project.Artifacts() + "/" + AgentDir, Target: AgentArtifacts, ReadOnly: true},
		{Type: "bind", Source: m.s.Project.Artifacts() + "/" + AgentDir + "/settings.json", Target: ManagedSettings, ReadOnly: true},
		{Type: "bind", Source: m.s.Project.Artifacts() + "/" + ResolvConf, Target: "/etc/resolv.conf", ReadOnly: true},
	}
	mounts = append(mounts, m.contextMounts()...)
	mounts = append(mounts, m.cacheMounts()...)
	return Container{
		Name:        m.agentName(),
		Network:     "container:" + m.netdName(),
		Runtime:     m.agentRuntimeFlag(),
		User:        strconv.Itoa(m.s.agent().UID) + ":" + strconv.Itoa(m.s.agent().GID),
		Workdir:     Workspace,
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
		Init:        true,
		PidsLimit:   m.c.Limits.Pids,
		Memory:      m.c.Limits.Memory,
		CPUs:        m.c.Limits.CPUs,
		ReadOnly:    true,
		Tmpfs:       agentTmpfs(m.s.agent()),
		Mounts:      mounts,
		Env:         withCacheEnv(withScratchEnv(m.agentEnv()), m.m.Mounts.Caches),
		Labels:      m.labels("agent"),
		Image:       m.agentImage,
		Command:     m.claudeArgs(),
	}
}

func (m *model) runSpec() ([]byte, error) {
	netd, agent := m.netdContainer(), m.agentContainer()
	egressAll, _ := m.egressList()
	rs := RunSpec{
		Version:      m.s.Version,
		Project:      m.m.Project,
		Profile:      m.m.Profile,
		Hash:         m.s.Project.Hash,
		Network:      m.c.Network,
		RunToken:     RunToken,
		ClaudeVol:    ClaudeVolume(m.s.Project.Hash),
		Netd:         RunCommand{Args: append([]string{"run", "--detach"}, netd.Args()...), Image: netd.Image, Command: netd.Command},
		Agent:        RunCommand{Args: append([]string{"create"}, agent.Args()...), Image: agent.Image, Command: agent.Command},
		Shell:        []string{"/bin/bash", "-l"},
		Masks:        m.masks(),
		Watch:        m.watch(),
		Permission:   m.m.Run.PermissionMode,
		Timeout:      m.m.Run.Timeout,
		Connectors:   m.m.Run.Connectors,
		OnExecChange: m.m.Run.OnExecChange,
		Egress:       len(egressAll),
		MCPEndpoint:  mcpURL,
		Reown:        m.reownCommand(),
		LoginCheck:   LoginCheckCommand(m.m.Project, m.s.Project.Hash, m.s.agent(), m.agentImage),
		Workspace:    m.workspaceMode(),
		Isolated:     IsolatedMount(m.s.Project.Clone(RunToken)).Arg(),
	}
	return marshalJSON(rs)
}

// workspaceMode is run.workspace, live when unset.
func (m *model) workspaceMode() string {
	if m.m.Run.Workspace == "" {
		return manifest.WorkspaceLive
	}
	return m.m.Run.Workspace
}

// AgentRuntime is the runtime the agent runs under: run.runtime, else config.yaml's
// defaults.runtime, else runc.
func AgentRuntime(m *manifest.Manifest, c *config.Config) string {
	switch {
	case m.Run.Runtime != "":
		return m.Run.Runtime
	case c.Defaults.Runtime != "":
		return c.Defaults.Runtime
	}
	return manifest.RuntimeRunc
}

// agentRuntimeFlag is the agent's --runtime value: none for runc, Docker's default, so that the
// argv of a project that never chose a runtime stays what it was.
func (m *model) agentRuntimeFlag() string {
	if rt := AgentRuntime(m.m, m.c); rt != manifest.RuntimeRunc {
		return rt
	}
	return ""
}

// RuntimeRunc is Docker's own runtime, the one an argv without --runtime runs under.
const RuntimeRunc = manifest.RuntimeRunc

// Runtime returns the agent's runtime as its argv says: the value of --runtime, or runc, Docker's
// default, when there is none. ok is false when the argv names a runtime more than once.
func (r RunSpec) Runtime() (rt string, ok bool) {
	var found []string
	for i, a := range r.Agent.Args {
		if a == "--runtime" && i+1 < len(r.Agent.Args) {
			found = append(found, r.Agent.Args[i+1])
		} else if v, cut := strings.CutPrefix(a, "--runtime="); cut {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 0:
		return manifest.RuntimeRunc, true
	case 1:
		return found[0], true
	}
	return "", false
}

// reownCommand is [RunSpec.Reown].
func (m *model) reownCommand() RunCommand {
	vol := Mount{Type: "volume", Source: ClaudeVolume(m.s.Project.Hash), Target: "/claude"}
	args := []string{"run", "--rm", "--pull", "never", "--network", "none", "--cap-drop", "ALL",
		"--cap-add", "CHOWN", "--cap-add", "DAC_READ_SEARCH", "--security-opt", "no-new-privileges",
		"--user", "0:0", "--read-only"}
	labels := m.labels("reown")
	delete(labels, "abox.run") // not a run's: `abox up` runs it
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	args = append(args, "--mount", vol.Arg(), "--entrypoint", "chown")
	return RunCommand{Args: args, Image: m.agentImage, Command: []string{"-R", "--no-dereference", m.s.agent().String(), "/claude"}}
}

// LoginScript exits 0 when the volume mounted at /claude holds a login (the OAuth credentials
// file, an API key accepted in /login, or an apiKeyHelper), 1 when it holds none, 3 when it
// cannot be read.
const LoginScript = `cd /claude || exit 3
if [ -s .credentials.json ] || grep -qs '"primaryApiKey"' .claude.json || grep -qs '"apiKeyHelper"' settings.json; then exit 0; fi
exit 1`

// LoginCheckCommand is [RunSpec.LoginCheck] of a project: [LoginScript] in a throwaway
// container of the agent image that has the project's ~/.claude volume read-only and nothing
// else: no network, no capabilities, no new privileges, a read-only root, the agent's uid.
func LoginCheckCommand(project, hash string, id Identity, image string) RunCommand {
	vol := Mount{Type: "volume", Source: ClaudeVolume(hash), Target: "/claude", ReadOnly: true}
	args := []string{"run", "--rm", "--pull", "never", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--user", id.String(), "--read-only",
		"--label", "abox.managed=true", "--label", "abox.role=login-check",
		"--label", "abox.project=" + project, "--label", "abox.hash=" + hash,
		"--mount", vol.Arg()}
	return RunCommand{Args: args, Image: image, Command: []string{"/bin/sh", "-c", LoginScript}}
}

// masks merges defaults.mask and mounts.mask, in order, without duplicates.
func (m *model) masks() []string { return Masks(m.c, m.m) }

// watch merges defaults.watch and mounts.watch, in order, without duplicates.
func (m *model) watch() []string { return Watched(m.c, m.m) }

// Masks is the mask patterns runspec.json holds for c and m: defaults.mask, then mounts.mask,
// without duplicates. Readers with nothing rendered (doctor) use it to get the same list.
func Masks(c *config.Config, m *manifest.Manifest) []string {
	return mergeUnique(c.Defaults.Mask, m.Mounts.Mask)
}

// Watched is the watch patterns runspec.json holds for c and m: defaults.watch, then
// mounts.watch, without duplicates; isolated runs flag the same files.
func Watched(c *config.Config, m *manifest.Manifest) []string {
	return mergeUnique(c.Defaults.Watch, m.Mounts.Watch)
}

func mergeUnique(lists ...[]string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, l := range lists {
		for _, v := range l {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// marshalJSON encodes v indented, without HTML escaping, with a trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
