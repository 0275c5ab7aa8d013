package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/manifest"
)

// `abox mcp import` brings the MCP servers this host already uses into a project, where the
// sandbox can run them. This file finds them and decides, for each, whether it can come in.

// HostServers reads the MCP servers this host already configures: the Docker MCP Toolkit's
// enabled servers (registry.yaml in mcpHome) and Claude Code's mcpServers in claudeConfig (its
// global servers and those of the workspace ws). Missing files are empty. A file that does not
// parse is a [*HostConfigError].
func HostServers(mcpHome, claudeConfig, ws string) ([]HostServer, error) {
	var out []HostServer
	data, err := os.ReadFile(filepath.Join(mcpHome, "registry.yaml"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var reg struct {
		Registry map[string]any `yaml:"registry"`
	}
	if err := yaml.Unmarshal(data, &reg); err != nil {
		return nil, &HostConfigError{Err: err}
	}
	for _, name := range slices.Sorted(maps.Keys(reg.Registry)) {
		out = append(out, HostServer{Name: name, Where: ToolkitWhere})
	}
	data, err = os.ReadFile(claudeConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	} else if err != nil {
		return nil, err
	}
	var cc struct {
		MCPServers map[string]ClaudeServer `json:"mcpServers"`
		Projects   map[string]struct {
			MCPServers map[string]ClaudeServer `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &cc); err != nil {
		return nil, &HostConfigError{ClaudeConfig: claudeConfig, Err: err}
	}
	out = append(out, claudeServers(cc.MCPServers, "~/.claude.json")...)
	return append(out, claudeServers(cc.Projects[ws].MCPServers, "~/.claude.json (this project)")...), nil
}

// ToolkitWhere is the Where of a server the Docker MCP Toolkit enables.
const ToolkitWhere = "Docker MCP Toolkit"

// HostConfigError is a host MCP configuration that does not parse: the Toolkit's registry.yaml,
// or Claude Code's configuration when ClaudeConfig names it.
type HostConfigError struct {
	ClaudeConfig string
	Err          error
}

func (e *HostConfigError) Error() string {
	if e.ClaudeConfig != "" {
		return fmt.Sprintf("reading %s: %v", e.ClaudeConfig, e.Err)
	}
	return fmt.Sprintf("reading the Docker MCP Toolkit registry: %v", e.Err)
}

func (e *HostConfigError) Unwrap() error { return e.Err }

// Answers of `mcp import` for one server found on the host.
const (
	ImportServer = "catalog server" // → servers
	ImportRemote = "remote server"  // → remote_servers
	ImportNo     = "no"
	ImportHave   = "declared"
)

// HostServer is one MCP server configured on the host, and what abox makes of it.
type HostServer struct {
	Name      string `json:"name"`
	Where     string `json:"where"`
	Import    string `json:"import"` // one of the answers above
	Reason    string `json:"reason,omitempty"`
	URL       string `json:"url,omitempty"`
	Transport string `json:"transport,omitempty"`
	// Headers is set when the host configures headers for it, which are never imported: they
	// may hold credentials.
	Headers bool `json:"-"`
}

// ClaudeServer is an entry of mcpServers in ~/.claude.json.
type ClaudeServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

func claudeServers(m map[string]ClaudeServer, where string) []HostServer {
	var out []HostServer
	for _, name := range slices.Sorted(maps.Keys(m)) {
		s := m[name]
		h := HostServer{Name: name, Where: where, URL: s.URL, Headers: len(s.Headers) > 0, Transport: manifest.DefaultTransport}
		if s.Type == "sse" {
			h.Transport = "sse"
		}
		switch {
		case name == "MCP_DOCKER" || (filepath.Base(s.Command) == "docker" && slices.Contains(s.Args, "mcp")):
			h.Import, h.Reason = ImportNo, "it is the Docker MCP gateway itself; abox runs its own, per profile"
		case s.URL != "":
			h.Import = ImportRemote
		default:
			h.Import, h.Reason = ImportNo, "a local stdio command: it would run on the host, outside any sandbox"
		}
		out = append(out, h)
	}
	return out
}

// ClassifyImports gives every found server its answer: what `abox mcp import --apply` would
// declare, and why not when it would not.
func (c *Catalog) ClassifyImports(found []HostServer, m *manifest.Manifest) []HostServer {
	out := make([]HostServer, 0, len(found))
	for _, h := range found {
		switch {
		case h.Where == ToolkitWhere:
			if _, ok := c.Lookup(h.Name); ok {
				h.Import = ImportServer
			} else {
				h.Import, h.Reason = ImportNo, "in no catalog abox can read"
			}
		case h.Import == ImportRemote:
			if u, err := url.Parse(h.URL); err != nil || u.Scheme != "https" {
				h.Import, h.Reason = ImportNo, "not an https URL; the gateway proxies only https servers"
			}
		}
		if h.Import != ImportNo && !manifest.IsServerName(h.Name) {
			h.Import, h.Reason = ImportNo, "its name is not a valid server name"
		}
		if h.Import != ImportNo && m.IsDeclared(h.Name) {
			h.Import, h.Reason = ImportHave, "already in agentbox.yaml"
		}
		out = append(out, h)
	}
	return out
}

// Importable returns the rows --apply declares, the first of each name only.
func Importable(rows []HostServer) []HostServer {
	var out []HostServer
	seen := map[string]bool{}
	for _, r := range rows {
		if (r.Import == ImportServer || r.Import == ImportRemote) && !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	return out
}

// ApplyImports declares rows in d: a catalog server in servers, a remote one in remote_servers.
// Headers are never imported.
func ApplyImports(d *manifest.Doc, rows []HostServer) error {
	for _, r := range rows {
		var err error
		if r.Import == ImportServer {
			err = d.DeclareServer(r.Name, nil)
		} else {
			err = d.SetRemoteServer(r.Name, manifest.RemoteServer{URL: r.URL, Transport: r.Transport})
		}
		if err != nil {
			return err
		}
	}
	return nil
}
