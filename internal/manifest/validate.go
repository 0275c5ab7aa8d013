package manifest

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/egress"
)

// MaxListLen bounds every list in the manifest, so a hostile manifest cannot make rendering or
// netd slow.
const MaxListLen = 20000

// checker collects problems.
type checker struct{ problems []Problem }

func (c *checker) add(loc, format string, args ...any) {
	c.problems = append(c.problems, Problem{Loc: loc, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) addHint(loc, hint, format string, args ...any) {
	c.problems = append(c.problems, Problem{Loc: loc, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// Validate checks every field and returns an [*Error] listing every problem, or nil.
func (m *Manifest) Validate(source string) error {
	var c checker
	c.identity(m)
	c.servers(m)
	c.remotes(m)
	c.tools(m)
	c.serverNetwork(m)
	c.toolchains(m)
	c.mounts(m)
	c.egress(m)
	c.envSecrets(m)
	c.run(m)
	if len(c.problems) == 0 {
		return nil
	}
	return &Error{Source: source, Problems: c.problems}
}

func (c *checker) identity(m *Manifest) {
	if m.Version != 0 && m.Version != Version {
		c.addHint("version", "this abox reads version 1 manifests; upgrade abox or set version: 1", "version %d is not supported", m.Version)
	}
	if m.Project == "" {
		c.addHint("project", "set project: <name>, or run `abox init`", "is required")
	} else if !IsProjectName(m.Project) {
		c.addHint("project", "use 1–64 of a-z 0-9 . _ -, starting with a letter or digit", "%q is not a valid project name", m.Project)
	}
	if m.Profile == "" {
		c.addHint("profile", "set profile: <name> (profiles are listed in config.yaml)", "is required")
	} else if !IsProjectName(m.Profile) {
		c.addHint("profile", "use 1–64 of a-z 0-9 . _ -, starting with a letter or digit", "%q is not a valid profile name", m.Profile)
	}
}

func (c *checker) servers(m *Manifest) {
	if c.tooLong("servers", len(m.Servers)) {
		return
	}
	seen := map[string]bool{}
	for i, s := range m.Servers {
		loc := fmt.Sprintf("servers[%d]", i)
		switch {
		case !IsServerName(s):
			c.add(loc, "%q is not a valid server name (letters, digits, . _ -)", s)
		case seen[s]:
			c.add(loc, "%q is declared twice", s)
		}
		seen[s] = true
	}
}

func (c *checker) remotes(m *Manifest) {
	for _, name := range slices.Sorted(maps.Keys(m.RemoteServers)) {
		r := m.RemoteServers[name]
		loc := KeyLoc("remote_servers", name)
		if !IsServerName(name) {
			c.add(loc, "%q is not a valid server name", name)
		} else if slices.Contains(m.Servers, name) {
			c.addHint(loc, "rename the remote server or remove it from servers", "%q is also in servers", name)
		}
		c.remoteURL(loc+".url", r.URL)
		if r.Transport != "" && !slices.Contains(Transports, r.Transport) {
			c.add(loc+".transport", "%q is not one of %s", r.Transport, strings.Join(Transports, ", "))
		}
		if err := CheckText(r.Description, 500); err != nil {
			c.add(loc+".description", "%v", err)
		}
		envs := c.remoteSecrets(loc, r.Secrets)
		c.remoteHeaders(loc, r.Headers, envs)
	}
}

func (c *checker) remoteURL(loc, raw string) {
	if err := CheckText(raw, 2048); err != nil {
		c.add(loc, "%v", err)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		c.add(loc, "is required")
	case err != nil:
		c.add(loc, "%q is not a URL", raw)
	case u.Scheme != "https":
		c.addHint(loc, "remote MCP servers must use https://", "%q is not an https URL", raw)
	case u.User != nil:
		c.addHint(loc, "put credentials in a secret and a header, not in the URL", "%q carries credentials", raw)
	case strings.ContainsAny(raw, " \"'`\\"):
		c.add(loc, "%q contains a space, quote or backslash", raw)
	case hasEncodedControl(raw):
		c.add(loc, "%q contains a %%-encoded control character", raw)
	default:
		if _, err := egress.Parse(u.Host); err != nil {
			c.add(loc, "%q has an invalid host: %v", raw, err)
		}
	}
}

// hasEncodedControl reports whether s holds a %-escape of a control character (%00, %0a, %7f),
// which would reach the server, or a log of the URL, as the raw byte.
func hasEncodedControl(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if b, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil && (b < 0x20 || b == 0x7f) {
			return true
		}
	}
	return false
}

func (c *checker) remoteSecrets(loc string, secrets []SecretEnv) map[string]bool {
	envs := map[string]bool{}
	if c.tooLong(loc+".secrets", len(secrets)) {
		return envs
	}
	for i, s := range secrets {
		l := fmt.Sprintf("%s.secrets[%d]", loc, i)
		if !IsSecretName(s.Name) {
			c.add(l+".name", "%q is not a valid secret name", s.Name)
		}
		if !IsEnvName(s.Env) {
			c.add(l+".env", "%q is not a valid environment variable name", s.Env)
		}
		envs[s.Env] = true
	}
	return envs
}

func (c *checker) remoteHeaders(loc string, headers map[string]string, envs map[string]bool) {
	for _, h := range slices.Sorted(maps.Keys(headers)) {
		l := KeyLoc(loc+".headers", h)
		if !headerRe.MatchString(h) {
			c.add(l, "%q is not a valid header name", h)
			continue
		}
		v := headers[h]
		if err := CheckText(v, 4096); err != nil {
			c.add(l, "%v", err)
			continue
		}
		for _, ref := range HeaderVars(v) {
			switch {
			case !IsEnvName(ref):
				c.addHint(l, "write ${NAME}, where NAME is the env of one of this server's secrets", "%q does not name an environment variable", "${"+ref+"}")
			case !envs[ref]:
				c.addHint(l, "declare it under secrets: with env: "+ref, "${%s} is not a declared secret env", ref)
			}
		}
	}
}

func (c *checker) tools(m *Manifest) {
	for _, server := range slices.Sorted(maps.Keys(m.Tools)) {
		loc := KeyLoc("tools", server)
		if !m.IsDeclared(server) {
			c.addHint(loc, "add the server with `abox mcp add "+safeArg(server)+"` or remove this entry", "%q is not a declared server", server)
			continue
		}
		if len(m.Tools[server]) == 0 {
			c.addHint(loc, "remove the entry to allow every tool of the server", "is an empty list")
		}
		if c.tooLong(loc, len(m.Tools[server])) {
			continue
		}
		seen := map[string]bool{}
		for i, t := range m.Tools[server] {
			l := fmt.Sprintf("%s[%d]", loc, i)
			switch {
			case !IsToolName(t):
				c.add(l, "%q is not a valid tool name", t)
			case seen[t]:
				c.add(l, "%q is listed twice", t)
			}
			seen[t] = true
		}
	}
}

func (c *checker) serverNetwork(m *Manifest) {
	for _, server := range slices.Sorted(maps.Keys(m.ServerNetwork)) {
		loc := KeyLoc("server_network", server)
		v := m.ServerNetwork[server]
		if !slices.Contains(ServerNetworks, v) {
			c.add(loc, "%q is not one of shared, none", v)
		}
		if _, remote := m.RemoteServers[server]; remote {
			c.add(loc, "%q is a remote server; its network is not abox's to set", server)
		} else if !slices.Contains(m.Servers, server) {
			c.addHint(loc, "declare it under servers: or remove this entry", "%q is not a declared server", server)
		}
	}
}

func (c *checker) toolchains(m *Manifest) {
	if c.tooLong("toolchains", len(m.Toolchains)) {
		return
	}
	seen := map[string]bool{}
	for i, t := range m.Toolchains {
		loc := fmt.Sprintf("toolchains[%d]", i)
		switch {
		case !slices.Contains(Toolchains, t):
			c.addHint(loc, "choose from "+strings.Join(Installable(), ", "), "%q is not a known toolchain", t)
		case Uninstallable[t] != (Refusal{}):
			r := Uninstallable[t]
			c.addHint(loc, "remove it from toolchains; "+r.Hint, "%s", r.Why)
		case seen[t]:
			c.add(loc, "%q is listed twice", t)
		}
		seen[t] = true
	}
}

func (c *checker) mounts(m *Manifest) {
	c.globs("mounts.mask", m.Mounts.Mask)
	c.globs("mounts.watch", m.Mounts.Watch)
	seen := map[string]bool{}
	for i, name := range m.Mounts.Caches {
		loc := fmt.Sprintf("mounts.caches[%d]", i)
		switch {
		case !slices.Contains(Caches, name):
			c.add(loc, "%q is not one of %s", name, strings.Join(Caches, ", "))
		case seen[name]:
			c.add(loc, "%q is listed twice", name)
		}
		seen[name] = true
	}
	if c.tooLong("mounts.context", len(m.Mounts.Context)) {
		return
	}
	for i, p := range m.Mounts.Context {
		loc := fmt.Sprintf("mounts.context[%d]", i)
		if err := CheckText(p, 1024); err != nil {
			c.add(loc, "%v", err)
			continue
		}
		if !strings.HasPrefix(p, "/") && p != "~" && !strings.HasPrefix(p, "~/") {
			c.addHint(loc, "write an absolute path or one starting with ~/", "%q is not absolute", p)
		}
		if strings.ContainsAny(p, "\"'`\\$") {
			c.add(loc, "%q contains a quote, backslash or $", p)
		}
	}
}

func (c *checker) globs(name string, list []string) {
	if c.tooLong(name, len(list)) {
		return
	}
	for i, p := range list {
		if err := CheckRelGlob(p); err != nil {
			c.add(fmt.Sprintf("%s[%d]", name, i), "%v", err)
		}
	}
}

func (c *checker) egress(m *Manifest) {
	allowed := c.hosts("egress", m.Egress)
	c.hosts("egress_ignored", m.EgressIgnored)
	for i, h := range m.EgressIgnored {
		if e, err := egress.Parse(h); err == nil && allowed[e.String()] {
			c.addHint(fmt.Sprintf("egress_ignored[%d]", i), "keep it in one of egress or egress_ignored", "%q is both allowed and ignored", h)
		}
	}
}

// hosts validates a list of egress entries and returns their canonical forms.
func (c *checker) hosts(name string, list []string) map[string]bool {
	out := map[string]bool{}
	if c.tooLong(name, len(list)) {
		return out
	}
	for i, h := range list {
		e, err := egress.Parse(h)
		if err != nil {
			p := Problem{Loc: fmt.Sprintf("%s[%d]", name, i), Msg: err.Error()}
			var ee *egress.Error
			if errors.As(err, &ee) {
				p.Hint = ee.Hint
			}
			c.problems = append(c.problems, p)
			continue
		}
		out[e.String()] = true
	}
	return out
}

func (c *checker) envSecrets(m *Manifest) {
	for _, env := range slices.Sorted(maps.Keys(m.EnvSecrets)) {
		loc := KeyLoc("env_secrets", env)
		switch {
		case !IsEnvName(env):
			c.add(loc, "%q is not a valid environment variable name", env)
		case slices.Contains(ReservedEnv, env) || strings.HasPrefix(env, "ABOX_"):
			c.add(loc, "%q is set by abox itself and cannot carry a secret", env)
		}
		if s := m.EnvSecrets[env]; !IsSecretName(s) {
			c.add(loc, "%q is not a valid secret name", s)
		}
	}
}

func (c *checker) run(m *Manifest) {
	r := m.Run
	if r.PermissionMode != "" && !slices.Contains(PermissionModes, r.PermissionMode) {
		c.add("run.permission_mode", "%q is not one of %s", r.PermissionMode, strings.Join(PermissionModes, ", "))
	}
	if r.Output != "" && !slices.Contains(Outputs, r.Output) {
		c.add("run.output", "%q is not one of %s", r.Output, strings.Join(Outputs, ", "))
	}
	if r.Timeout != 0 && (r.Timeout < MinTimeout || r.Timeout > MaxTimeout) {
		c.add("run.timeout", "%d is outside %d–%d seconds", r.Timeout, MinTimeout, MaxTimeout)
	}
	if r.OnExecChange != "" && !slices.Contains(OnExecChanges, r.OnExecChange) {
		c.add("run.on_exec_change", "%q is not one of %s", r.OnExecChange, strings.Join(OnExecChanges, ", "))
	}
	if r.Runtime != "" && !slices.Contains(Runtimes, r.Runtime) {
		c.add("run.runtime", "%q is not one of %s", r.Runtime, strings.Join(Runtimes, ", "))
	}
	if r.Workspace != "" && !slices.Contains(Workspaces, r.Workspace) {
		c.add("run.workspace", "%q is not one of %s", r.Workspace, strings.Join(Workspaces, ", "))
	}
}

func (c *checker) tooLong(loc string, n int) bool {
	if n > MaxListLen {
		c.add(loc, "has %d entries; at most %d are allowed", n, MaxListLen)
		return true
	}
	return false
}

// safeArg returns s if it is safe to show inside a suggested command, else a placeholder.
func safeArg(s string) string {
	if IsServerName(s) {
		return s
	}
	return "<server>"
}
