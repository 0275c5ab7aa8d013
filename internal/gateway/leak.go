package gateway

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
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
//
// A narrowing can leak the same way: netd allows a listed name whichever server provides it, so
// a tools: entry naming another project's tool (whoami under echo, say) lets that tool through.
type Leak struct {
	Project   string
	Workspace string
	Unlisted  []string // the project's servers whose tools nobody lists, sorted
	Foreign   []string // servers the gateway serves that the project does not declare, sorted
	Owners    []string // the projects that declare Foreign, sorted
	// Borrowed maps each tool name the project lets through that a Foreign server documents to
	// that server.
	Borrowed map[string]string
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
	return append(slices.Clone(b.Servers), slices.Sorted(maps.Keys(b.RemoteServers))...)
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
func (r *Registry) Leaks(custom config.CustomServers, cat *catalog.Catalog) []Leak {
	rcat := renderCatalog(cat)
	serving := r.Union().All()
	var out []Leak
	for _, h := range r.Hashes() {
		b := r.Projects[h]
		if !b.Declares() {
			continue
		}
		l := Leak{Project: b.Project, Workspace: b.Workspace, Unlisted: b.Unlisted(custom, rcat)}
		if r.leak(&l, b.allServers(), b.allowed(custom, rcat), serving, custom, cat) {
			out = append(out, l)
		}
	}
	return out
}

// leak is the one rule that decides whether a project's netd keeps its agent to the project's
// own tools behind a gateway serving serving, for `gateway up` ([Registry.Leaks]) and for a run
// and doctor ([ProjectScope]). The project declares declared; its netd lets through the tool
// names allowed, and every name when l.Unlisted is not empty. leak fills l.Foreign, and, when
// there are foreign servers, l.Borrowed and l.Owners; it reports whether the agent can reach a
// tool of a foreign server: through an unlisted server's open door, or a name it borrows.
func (r *Registry) leak(l *Leak, declared, allowed, serving []string, custom config.CustomServers, cat *catalog.Catalog) bool {
	l.Foreign = ForeignServers(declared, serving)
	if len(l.Foreign) == 0 {
		return false
	}
	l.Borrowed = r.Union().BorrowedTools(allowed, l.Foreign, custom, cat)
	l.Owners = r.Declaring(l.Foreign)
	return len(l.Unlisted) > 0 || len(l.Borrowed) > 0
}

// allowed returns the tool names b's netd lets through by name: the known tools of its servers.
func (b Binding) allowed(custom config.CustomServers, cat render.Catalog) []string {
	var out []string
	for _, s := range b.allServers() {
		tools, _ := render.ServerTools(s, b.Tools, custom, cat)
		out = append(out, tools...)
	}
	return out
}

// BorrowedTools returns the names of allowed that the gateway serves from a server of foreign,
// each with that server; nil when there are none. Tool names are unique across a gateway (it
// refuses duplicates), so such a name reaches the foreign server whatever server the project's
// narrowing files it under.
func (u *Union) BorrowedTools(allowed, foreign []string, custom config.CustomServers, cat *catalog.Catalog) map[string]string {
	var out map[string]string
	for _, f := range foreign {
		for _, t := range u.ServedTools(f, custom, cat) {
			if slices.Contains(allowed, t) {
				if out == nil {
					out = map[string]string{}
				}
				out[t] = f
			}
		}
	}
	return out
}

// ServedTools returns the tool names the gateway serves from server as far as abox knows: what
// custom-servers.yaml or its catalog entry documents (under the entry's prefix), or, when
// nothing does, what the projects' narrowings of it name (its server:tool entries of --tools).
// A documented list wins: a narrowing can name anything, another server's tools included.
func (u *Union) ServedTools(server string, custom config.CustomServers, cat *catalog.Catalog) []string {
	var out []string
	if e, ok := lookup(cat, server); ok {
		out = e.ToolNames()
	} else {
		out, _ = render.ServerTools(server, nil, custom, nil)
	}
	out = slices.DeleteFunc(slices.Clone(out), func(t string) bool { return t == "*" })
	if len(out) == 0 {
		for _, st := range u.Tools {
			if s, t, _ := strings.Cut(st, ":"); s == server && t != "*" {
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

func lookup(cat *catalog.Catalog, server string) (catalog.Entry, bool) {
	if cat == nil {
		return catalog.Entry{}, false
	}
	return cat.Lookup(server)
}

// renderCatalog is cat as render sees it: a nil catalog stays a nil interface.
func renderCatalog(cat *catalog.Catalog) render.Catalog {
	if cat == nil {
		return nil
	}
	return cat
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
// reason it is Unlisted ([policy.MCP.UnlistedServers]).
func UnlistedServers(m *policy.MCP) []string { return m.UnlistedServers() }
