package manifest

import (
	"fmt"
	"maps"

	"github.com/aboxhq/abox/internal/egress"
	"slices"
	"strings"
)

// Widening lists how b reaches further than a: hosts, servers, secrets and context added,
// masks or narrowing removed, connectors switched on, the permission mode changed, a failing
// run.on_exec_change relaxed, run.runtime runsc dropped. Each line
// starts with "+" (more reach) or "-" (a control removed). It is what `abox up` asks about.
func Widening(a, b *Manifest) []string {
	var out []string
	added := func(field string, old, new []string) {
		for _, v := range new {
			if !slices.Contains(old, v) {
				out = append(out, fmt.Sprintf("+ %s: %s", field, v))
			}
		}
	}
	removed := func(field string, old, new []string) {
		for _, v := range old {
			if !slices.Contains(new, v) {
				out = append(out, fmt.Sprintf("- %s: %s (no longer applied)", field, v))
			}
		}
	}
	if a.Profile != b.Profile {
		out = append(out, fmt.Sprintf("+ profile: %s → %s (another gateway, and the servers of its projects)", a.Profile, b.Profile))
	}
	added("egress", canonHosts(a.Egress), canonHosts(b.Egress))
	added("toolchains", a.Toolchains, b.Toolchains)
	added("servers", a.DeclaredServers(), b.DeclaredServers())
	added("mounts.context", a.Mounts.Context, b.Mounts.Context)
	added("mounts.caches", a.Mounts.Caches, b.Mounts.Caches)
	removed("mounts.mask", a.Mounts.Mask, b.Mounts.Mask)
	removed("mounts.watch", a.Mounts.Watch, b.Mounts.Watch)
	for _, name := range slices.Sorted(maps.Keys(b.RemoteServers)) {
		old, ok := a.RemoteServers[name]
		if ok && !sameRemote(old, b.RemoteServers[name]) {
			out = append(out, fmt.Sprintf("+ remote_servers.%s: url, headers or secrets changed", name))
		}
	}
	for _, env := range slices.Sorted(maps.Keys(b.EnvSecrets)) {
		if a.EnvSecrets[env] != b.EnvSecrets[env] {
			out = append(out, fmt.Sprintf("+ env_secrets: %s ← %s", env, b.EnvSecrets[env]))
		}
	}
	for _, server := range slices.Sorted(maps.Keys(a.Tools)) {
		newTools, narrowed := b.Tools[server]
		switch {
		case !narrowed:
			out = append(out, fmt.Sprintf("- tools.%s: narrowing removed (every tool allowed)", server))
		default:
			added("tools."+server, a.Tools[server], newTools)
		}
	}
	for _, server := range slices.Sorted(maps.Keys(a.ServerNetwork)) {
		if a.ServerNetwork[server] == "none" && b.ServerNetwork[server] != "none" {
			out = append(out, fmt.Sprintf("- server_network.%s: none removed (the server gets network)", server))
		}
	}
	if !a.Run.Connectors && b.Run.Connectors {
		out = append(out, "+ run.connectors: true (claude.ai connectors, a second MCP path)")
	}
	if a.Run.PermissionMode != b.Run.PermissionMode {
		out = append(out, fmt.Sprintf("+ run.permission_mode: %s → %s", a.Run.PermissionMode, b.Run.PermissionMode))
	}
	if a.Run.OnExecChange == ExecChangeFail && b.Run.OnExecChange != ExecChangeFail {
		out = append(out, "- run.on_exec_change: fail (a run that changes what runs outside the sandbox no longer fails)")
	}
	if a.Run.Runtime == RuntimeRunsc && b.Run.Runtime != RuntimeRunsc {
		out = append(out, "- run.runtime: runsc (the agent's syscalls reach the host's kernel again, unless config.yaml's defaults.runtime is runsc)")
	}
	if a.Run.Workspace == WorkspaceIsolated && b.Run.Workspace != WorkspaceIsolated {
		out = append(out, "- run.workspace: isolated (the agent writes your checkout itself again)")
	}
	return out
}

// canonHosts returns the canonical form of each egress entry, so a change of case or a trailing
// dot is not reported as a new host.
func canonHosts(hosts []string) []string {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if e, err := egress.Parse(h); err == nil {
			h = e.String()
		}
		out = append(out, h)
	}
	return out
}

func sameRemote(a, b RemoteServer) bool {
	if a.URL != b.URL || a.Transport != b.Transport || len(a.Headers) != len(b.Headers) || !slices.Equal(a.Secrets, b.Secrets) {
		return false
	}
	for k, v := range a.Headers {
		if b.Headers[k] != v {
			return false
		}
	}
	return true
}

// LineDiff returns a unified-style diff of two texts: context lines start with two spaces,
// removed lines with "- ", added lines with "+ ". Equal texts give "".
func LineDiff(a, b string) string {
	if a == b {
		return ""
	}
	x, y := strings.Split(strings.TrimSuffix(a, "\n"), "\n"), strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	var sb strings.Builder
	for len(x) > 0 && len(y) > 0 && x[0] == y[0] {
		sb.WriteString("  " + x[0] + "\n")
		x, y = x[1:], y[1:]
	}
	var suffix []string
	for len(x) > 0 && len(y) > 0 && x[len(x)-1] == y[len(y)-1] {
		suffix = append([]string{"  " + x[len(x)-1]}, suffix...)
		x, y = x[:len(x)-1], y[:len(y)-1]
	}
	if len(x)*len(y) > 1<<22 { // too large for a table: show the changed block whole
		for _, l := range x {
			sb.WriteString("- " + l + "\n")
		}
		for _, l := range y {
			sb.WriteString("+ " + l + "\n")
		}
	} else {
		lcsDiff(&sb, x, y)
	}
	for _, l := range suffix {
		sb.WriteString(l + "\n")
	}
	return sb.String()
}

// lcsDiff writes the diff of x and y from their longest common subsequence.
func lcsDiff(sb *strings.Builder, x, y []string) {
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			sb.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			sb.WriteString("- " + x[i] + "\n")
			i++
		default:
			sb.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
}
