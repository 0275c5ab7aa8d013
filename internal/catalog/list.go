package catalog

import (
	"maps"
	"slices"

	"github.com/aboxhq/abox/internal/manifest"
)

// Server is one server as `abox mcp list` shows it; its JSON form is stable.
type Server struct {
	Server  string   `json:"server"`
	Kind    string   `json:"kind"` // server, poci, remote; unknown when no catalog has it
	Image   string   `json:"image,omitempty"`
	URL     string   `json:"url,omitempty"`
	Pinned  bool     `json:"pinned"`
	Local   bool     `json:"local,omitempty"` // a custom server's pin: false image: never pulled
	Secrets []string `json:"secrets"`
	Source  string   `json:"source"`          // the catalog file, custom, or manifest-remote
	Tools   []string `json:"tools,omitempty"` // the project's narrowing
	Network string   `json:"network,omitempty"`
}

// ProjectServers lists the servers m declares, as c knows them, then its remote servers, with
// the project's narrowing and network of each.
func (c *Catalog) ProjectServers(m *manifest.Manifest) []Server {
	var rows []Server
	for _, s := range m.Servers {
		r := Server{Server: s, Kind: "unknown", Source: "not in any catalog", Secrets: []string{}}
		if e, ok := c.Lookup(s); ok {
			r = e.Server()
		}
		r.Tools, r.Network = m.Tools[s], m.ServerNetwork[s]
		rows = append(rows, r)
	}
	for _, name := range slices.Sorted(maps.Keys(m.RemoteServers)) {
		rs := m.RemoteServers[name]
		r := Server{Server: name, Kind: "remote", URL: rs.URL, Pinned: true, Source: "manifest-remote", Secrets: []string{}, Tools: m.Tools[name]}
		for _, sec := range rs.Secrets {
			r.Secrets = append(r.Secrets, sec.Name)
		}
		rows = append(rows, r)
	}
	return rows
}

// Server is the entry as a row of `abox mcp list`.
func (e Entry) Server() Server {
	r := Server{Server: e.Name, Kind: e.Type, Image: e.Image, URL: e.RemoteURL, Pinned: e.Pinned(), Source: e.Source, Secrets: []string{},
		Local: e.Source == "custom" && !e.Pin}
	for _, s := range e.Secrets {
		r.Secrets = append(r.Secrets, s.Name)
	}
	return r
}

// Servers lists every server c knows, by name.
func (c *Catalog) Servers() []Server {
	var rows []Server
	for _, name := range c.Names() {
		e, _ := c.Lookup(name)
		rows = append(rows, e.Server())
	}
	return rows
}

// Endpoint says where the server runs, as `abox mcp list` shows it: its image, shortened to
// the start of its repository and the end of its digest, and marked when it is local (never
// pulled) or unpinned; else its URL; "-" when it has neither. A server without a network says
// so.
func (s Server) Endpoint() string {
	where := s.URL
	if s.Image != "" {
		where = elide(s.Image)
		switch {
		case s.Local:
			where += " (local, never pulled)"
		case !s.Pinned:
			where += " (unpinned)"
		}
	}
	if where == "" {
		where = "-"
	}
	if s.Network == "none" {
		where += " (no network)"
	}
	return where
}

// elide shortens a long image reference to its repository's start and its digest's end.
func elide(s string) string {
	if len(s) < 54 {
		return s
	}
	return s[:26] + "…" + s[len(s)-24:]
}
