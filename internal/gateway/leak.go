package gateway

import (
	"slices"
	"sort"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// Leak is a bound project whose netd would let its agent call tools of servers it does not
// declare.
//
// netd narrows what the gateway serves to the project's own tools, by name. For a declared,
// un-narrowed server whose tools nobody lists (not its narrowing, not custom-servers.yaml, not
// the catalog) it cannot know the names, so it lets through every tool name it does not know
// ([policy.MCP.Unlisted]). While the gateway serves only the project's own servers that is no
// wider than what the project declares. Once it also serves another project's servers, the
// agent can call their tools, with the secrets behind them.
type Leak struct {
	Project   string
	Workspace string
	Unlisted  []string // the project's servers whose tools nobody lists, sorted
	Foreign   []string // servers the gateway serves that the project does not declare, sorted
	Owners    []string // the projects that declare Foreign, sorted
}

// Unlisted returns the servers b declares whose tools neither its narrowing, custom-servers.yaml
// nor the catalog lists, sorted: exactly those for which its rendered netd policy is Unlisted.
func (b Binding) Unlisted(custom config.CustomServers, cat render.Catalog) []string {
	var out []string
	for _, s := range b.allServers() {
		if _, known := render.ServerTools(s, b.Tools, custom, cat); !known {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// allServers returns the catalog, custom and remote servers of b.
func (b Binding) allServers() []string {
	return append(slices.Clone(b.Servers), sortedKeys(b.RemoteServers)...)
}

// ForeignServers returns the servers of serving that declared does not name, sorted.
func ForeignServers(declared, serving []string) []string {
	var out []string
	for _, s := range serving {
		if !slices.Contains(declared, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Leaks returns the bound projects whose netd would let their agent call other projects' tools
// from a gateway serving the registry's union. `gateway up` refuses to start such a gateway:
// a project's preflight only sees the gateway as it is when its run starts.
func (r *Registry) Leaks(custom config.CustomServers, cat render.Catalog) []Leak {
	serving := r.Union().All()
	var out []Leak
	for _, h := range r.Hashes() {
		b := r.Projects[h]
		if !b.Declares() {
			continue
		}
		unlisted := b.Unlisted(custom, cat)
		foreign := ForeignServers(b.allServers(), serving)
		if len(unlisted) == 0 || len(foreign) == 0 {
			continue
		}
		out = append(out, Leak{Project: b.Project, Workspace: b.Workspace, Unlisted: unlisted,
			Foreign: foreign, Owners: r.Declaring(foreign)})
	}
	return out
}

// Declaring returns the names of the bound projects that declare any of servers, sorted.
func (r *Registry) Declaring(servers []string) []string {
	var out []string
	for _, h := range r.Hashes() {
		b := r.Projects[h]
		for _, s := range servers {
			if b.declares(s) {
				out = append(out, b.Project)
				break
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// UnlistedServers returns the servers of a rendered netd policy that netd knows no tool of: the
// reason it is Unlisted. Every server of a policy that is not Unlisted has a known tool.
func UnlistedServers(m *policy.MCP) []string {
	known := map[string]bool{}
	for _, server := range m.Tools {
		known[server] = true
	}
	var out []string
	for _, s := range m.Servers {
		if !known[s] {
			out = append(out, s)
		}
	}
	return out
}
