package gateway

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Union is what a profile's gateway serves: the union of its bound projects' declarations.
type Union struct {
	Profile  string
	Projects []string          // names of the projects that declare servers, sorted
	Servers  []string          // catalog and custom servers, sorted
	Remote   map[string]Remote // remote servers by name
	// NetworkNone are the servers some project runs with server_network: none. The most
	// restrictive choice wins: the gateway has one definition per server.
	NetworkNone []string
	// Tools is the gateway's --tools list: server:tool for every tool of a server that every
	// declaring project narrows (the union of their lists), server:* for the others.
	Tools []string
	// Conflicts describe names two projects define differently; the gateway cannot serve both.
	Conflicts []string
}

// Union computes what the profile's gateway serves. Projects are visited in hash order, so the
// result does not depend on the order of binding.
func (r *Registry) Union() *Union {
	u := &Union{Profile: r.Profile, Remote: map[string]Remote{}}
	servers, none := map[string]bool{}, map[string]bool{}
	remoteBy := map[string]string{} // remote name → project that defined it first
	for _, h := range r.Hashes() {
		b := r.Projects[h]
		if !b.Declares() {
			continue
		}
		u.Projects = append(u.Projects, b.Project)
		for _, s := range b.Servers {
			servers[s] = true
			if b.ServerNetwork[s] == "none" {
				none[s] = true
			}
		}
		for _, name := range slices.Sorted(maps.Keys(b.RemoteServers)) {
			rs := b.RemoteServers[name]
			if prev, ok := u.Remote[name]; ok && !equalJSON(prev, rs) {
				u.Conflicts = append(u.Conflicts, fmt.Sprintf("projects %s and %s define remote server %q differently", remoteBy[name], b.Project, name))
				continue
			}
			if _, ok := u.Remote[name]; !ok {
				u.Remote[name], remoteBy[name] = rs, b.Project
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(servers)) {
		if by, ok := remoteBy[s]; ok {
			u.Conflicts = append(u.Conflicts, fmt.Sprintf("%q is a remote server of project %s and a catalog or custom server of another project", s, by))
			continue
		}
		u.Servers = append(u.Servers, s)
	}
	u.NetworkNone = slices.Sorted(maps.Keys(none))
	sort.Strings(u.Projects)
	u.Projects = slices.Compact(u.Projects)
	u.Tools = r.toolsFlag(u.All())
	return u
}

// toolsFlag renders the --tools list for servers. Bare tool names are never emitted: the
// gateway reads a non-empty list as "only these tools", so a bare name would switch off every
// tool of every server not listed.
func (r *Registry) toolsFlag(servers []string) []string {
	var out []string
	for _, s := range servers {
		narrowed, tools := true, map[string]bool{}
		for _, h := range r.Hashes() {
			b := r.Projects[h]
			if !b.declares(s) {
				continue
			}
			list, ok := b.Tools[s]
			if !ok {
				narrowed = false
				break
			}
			for _, t := range list {
				tools[t] = true
			}
		}
		if !narrowed || len(tools) == 0 {
			out = append(out, s+":*")
			continue
		}
		for _, t := range slices.Sorted(maps.Keys(tools)) {
			out = append(out, s+":"+t)
		}
	}
	return out
}

func (b Binding) declares(server string) bool {
	if _, ok := b.RemoteServers[server]; ok {
		return true
	}
	return slices.Contains(b.Servers, server)
}

// All returns every server name the gateway serves, sorted: its --servers list.
func (u *Union) All() []string {
	out := append(slices.Clone(u.Servers), slices.Sorted(maps.Keys(u.Remote))...)
	sort.Strings(out)
	return slices.Compact(out)
}

// RemoteNames returns the remote servers' names, sorted.
func (u *Union) RemoteNames() []string { return slices.Sorted(maps.Keys(u.Remote)) }

// Empty reports whether no bound project declares a server.
func (u *Union) Empty() bool { return len(u.Servers)+len(u.Remote) == 0 }
