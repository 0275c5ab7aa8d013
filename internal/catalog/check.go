package catalog

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Kind says what a [Finding] is about, so that the caller can attach the hint that fixes it.
type Kind string

// Kinds of findings.
const (
	// Unknown: a declared server is neither in a catalog nor in custom-servers.yaml. The
	// gateway would log "MCP server not found" and start without it.
	Unknown Kind = "unknown"
	// ToolCollision: two servers list a tool under the same name. The gateway refuses to
	// start ("tool name collision").
	ToolCollision Kind = "tool-collision"
	// UnpinnedSigned: a docker.io/mcp/* image without a digest. With --verify-signatures
	// the gateway aborts at start-up ("image must be referenced by digest").
	UnpinnedSigned Kind = "unpinned-mcp"
	// Unpinned: another image referenced by a mutable tag.
	Unpinned Kind = "unpinned"
	// LocalImage: a custom server with pin: false, a local image that is never pulled and
	// whose signature nobody verifies.
	LocalImage Kind = "local-image"
	// NoCatalog: the Docker MCP Toolkit catalog directory is missing or a file was skipped.
	NoCatalog Kind = "no-catalog"
)

// Finding is one problem [Catalog.Check] found. An Error stops abox before it starts the
// gateway; the rest are warnings.
type Finding struct {
	Kind    Kind
	Server  string // "" for findings about the catalog itself
	Message string // lower-case, without a hint
	Error   bool
}

// Check validates the servers a gateway is about to serve, because the gateway itself only logs
// these problems and starts anyway, with fewer tools or none. remote are the servers that come
// from manifests' remote_servers rather than from the catalog; they are not looked up.
//
// Findings come sorted: errors first, then by server.
func (c *Catalog) Check(servers []string, remote []string) []Finding {
	var out []Finding
	for _, w := range c.Warnings {
		out = append(out, Finding{Kind: NoCatalog, Message: w})
	}
	isRemote := map[string]bool{}
	for _, r := range remote {
		isRemote[r] = true
	}
	var known []Entry
	for _, name := range servers {
		if isRemote[name] {
			continue
		}
		e, ok := c.entries[name]
		if !ok {
			out = append(out, Finding{Kind: Unknown, Server: name, Error: true,
				Message: fmt.Sprintf("MCP server %q is in no catalog and not in custom-servers.yaml", name)})
			continue
		}
		known = append(known, e)
		if f, ok := imageFinding(e); ok {
			out = append(out, f)
		}
	}
	out = append(out, collisions(known)...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Error != out[j].Error {
			return out[i].Error
		}
		return out[i].Server < out[j].Server
	})
	return out
}

// imageFinding reports what is wrong with an entry's image, if anything.
func imageFinding(e Entry) (Finding, bool) {
	switch {
	case e.Type == "remote" || e.Type == "poci" || e.Image == "":
		return Finding{}, false
	case e.Source == "custom" && !e.Pin:
		return Finding{Kind: LocalImage, Server: e.Name,
			Message: fmt.Sprintf("custom server %q uses the local image %s (pin: false): never pulled, not verified", e.Name, e.Image)}, true
	case e.Pinned():
		return Finding{}, false
	case e.Signed():
		return Finding{Kind: UnpinnedSigned, Server: e.Name, Error: true,
			Message: fmt.Sprintf("server %q: image %s is not pinned by digest; the gateway verifies docker.io/mcp/* signatures and refuses a tag", e.Name, e.Image)}, true
	default:
		return Finding{Kind: Unpinned, Server: e.Name,
			Message: fmt.Sprintf("server %q: image %s is a mutable tag, not a digest", e.Name, e.Image)}, true
	}
}

// collisions reports tool names that two or more entries list, under their prefixes.
func collisions(entries []Entry) []Finding {
	owners := map[string][]string{}
	for _, e := range entries {
		for _, t := range uniq(e.ToolNames()) {
			owners[t] = append(owners[t], e.Name)
		}
	}
	var out []Finding
	for _, tool := range slices.Sorted(maps.Keys(owners)) {
		if names := owners[tool]; len(names) > 1 {
			out = append(out, Finding{Kind: ToolCollision, Server: names[0], Error: true,
				Message: fmt.Sprintf("tool %q is provided by %s; the gateway refuses duplicate tool names", tool, strings.Join(names, " and "))})
		}
	}
	return out
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// Images returns the images the gateway will run for servers, with whether each may be pulled.
// Remote, POCI and unknown servers have none. A custom server with pin: false names a local
// image: it must exist and is never pulled.
func (c *Catalog) Images(servers []string) []Image {
	var out []Image
	seen := map[string]bool{}
	for _, name := range servers {
		e, ok := c.entries[name]
		if !ok || e.Type == "remote" || e.Type == "poci" || e.Image == "" || seen[e.Image] {
			continue
		}
		seen[e.Image] = true
		out = append(out, Image{Server: name, Ref: e.Image, Pull: e.Pin})
	}
	return out
}

// Image is one server image the gateway needs present, since it runs servers with --pull never.
type Image struct {
	Server string
	Ref    string
	Pull   bool // false: a local image that must already exist
}
