package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/render"
)

// Entry is one server as abox sees it.
type Entry struct {
	Name        string
	Title       string
	Description string
	Type        string // server, remote, poci
	Image       string
	Secrets     []Secret
	Tools       []string
	AllowHosts  []string
	RemoteURL   string
	Transport   string
	OAuth       []string // OAuth providers
	Prefix      string   // the entry's prefix: its tools are listed as <prefix>__<tool>
	Source      string   // the catalog file, or "custom"
	Pin         bool     // the image must be digest-pinned (false only for custom pin: false)
	Raw         map[string]any
}

// Secret is a secret a server reads from an environment variable.
type Secret struct{ Name, Env string }

// Catalog is every known server by name.
type Catalog struct {
	entries  map[string]Entry
	Warnings []string // e.g. the catalog directory is missing
}

// Server implements [render.Catalog].
func (c *Catalog) Server(name string) (render.CatalogServer, bool) {
	e, ok := c.entries[name]
	if !ok {
		return render.CatalogServer{}, false
	}
	cs := render.CatalogServer{Tools: e.ToolNames(), Prefix: e.Prefix} // as the gateway serves them, prefix included
	if e.Source != "custom" && e.Type != "remote" {
		cs.Raw = e.Raw
	}
	return cs, true
}

// Lookup returns the entry of name.
func (c *Catalog) Lookup(name string) (Entry, bool) {
	e, ok := c.entries[name]
	return e, ok
}

// Names returns every server name, sorted.
func (c *Catalog) Names() []string {
	out := make([]string, 0, len(c.entries))
	for n := range c.entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Len is the number of known servers.
func (c *Catalog) Len() int { return len(c.entries) }

// Load reads every *.yaml catalog under mcpHome/catalogs (files sorted; a later file wins a
// name) and then the custom servers, which shadow catalog entries of the same name.
func Load(mcpHome string, custom config.CustomServers) (*Catalog, error) {
	c := &Catalog{entries: map[string]Entry{}}
	dir := filepath.Join(mcpHome, "catalogs")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		c.Warnings = append(c.Warnings, "no Docker MCP Toolkit catalog at "+dir+"; only custom servers are known")
	}
	sort.Strings(files)
	for _, f := range files {
		if err := c.loadFile(f); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(custom)) {
		if _, ok := c.entries[name]; ok {
			c.Warnings = append(c.Warnings, fmt.Sprintf("custom server %q shadows the catalog entry of the same name", name))
		}
		c.entries[name] = fromCustom(name, custom[name])
	}
	return c, nil
}

func (c *Catalog) loadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading catalog %s: %w", path, err)
	}
	var doc struct {
		Registry map[string]map[string]any `yaml:"registry"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("catalog %s: %w", path, err)
	}
	if doc.Registry == nil {
		c.Warnings = append(c.Warnings, fmt.Sprintf("catalog %s has no registry: key; skipped", path))
		return nil
	}
	for name, raw := range doc.Registry {
		c.entries[name] = fromRaw(name, filepath.Base(path), raw)
	}
	return nil
}

func fromRaw(name, source string, raw map[string]any) Entry {
	e := Entry{Name: name, Source: source, Raw: raw, Pin: true,
		Title: str(raw["title"]), Description: str(raw["description"]), Type: str(raw["type"]), Image: str(raw["image"]),
		Prefix: str(raw["prefix"])}
	for _, s := range list(raw["secrets"]) {
		m, _ := s.(map[string]any)
		e.Secrets = append(e.Secrets, Secret{Name: str(m["name"]), Env: str(m["env"])})
	}
	for _, t := range list(raw["tools"]) {
		if m, ok := t.(map[string]any); ok && str(m["name"]) != "" {
			e.Tools = append(e.Tools, str(m["name"]))
		}
	}
	for _, h := range list(raw["allowHosts"]) {
		e.AllowHosts = append(e.AllowHosts, str(h))
	}
	if r, ok := raw["remote"].(map[string]any); ok {
		e.RemoteURL, e.Transport = str(r["url"]), str(r["transport_type"])
		if e.Type == "" {
			e.Type = "remote"
		}
	}
	if o, ok := raw["oauth"].(map[string]any); ok {
		for _, p := range list(o["providers"]) {
			if m, ok := p.(map[string]any); ok {
				e.OAuth = append(e.OAuth, str(m["provider"]))
			}
		}
	}
	if e.Type == "" {
		e.Type = "server"
		if e.Image == "" {
			e.Type = "poci"
		}
	}
	return e
}

func fromCustom(name string, s config.CustomServer) Entry {
	e := Entry{Name: name, Title: name, Description: s.Description, Type: "server", Image: s.Image,
		Source: "custom", Pin: s.Pinned()}
	for _, sec := range s.Secrets {
		e.Secrets = append(e.Secrets, Secret{Name: sec.Name, Env: sec.Env})
	}
	for _, t := range s.Tools {
		if t != "*" {
			e.Tools = append(e.Tools, t)
		}
	}
	return e
}

// Pinned reports whether the entry's image is digest-pinned, or needs no pin.
func (e Entry) Pinned() bool {
	if e.Type == "remote" || e.Type == "poci" || !e.Pin {
		return true
	}
	return config.IsPinned(e.Image)
}

// Signed reports whether the gateway verifies the image's signature: only docker.io/mcp/*.
func (e Entry) Signed() bool {
	img := strings.TrimPrefix(strings.TrimPrefix(e.Image, "index.docker.io/"), "docker.io/")
	return strings.HasPrefix(img, "mcp/")
}

// ToolNames returns the names the gateway lists the entry's documented tools under: with its
// prefix, <prefix>__<tool>.
func (e Entry) ToolNames() []string {
	if e.Prefix == "" {
		return e.Tools
	}
	out := make([]string, len(e.Tools))
	for i, t := range e.Tools {
		out[i] = e.Prefix + "__" + t
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// Unknown returns the names neither a catalog nor custom-servers.yaml knows, in order.
func (c *Catalog) Unknown(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := c.Lookup(n); !ok {
			out = append(out, n)
		}
	}
	return out
}
