package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/termtext"
)

// Answers of `mcp import` for one server found on the host.
const (
	importServer = "catalog server" // → servers
	importRemote = "remote server"  // → remote_servers
	importNo     = "no"
	importHave   = "declared"
)

// hostServer is one MCP server configured on the host, and what abox makes of it.
type hostServer struct {
	Name      string `json:"name"`
	Where     string `json:"where"`
	Import    string `json:"import"` // one of the answers above
	Reason    string `json:"reason,omitempty"`
	URL       string `json:"url,omitempty"`
	Transport string `json:"transport,omitempty"`
	headers   bool
}

// claudeServer is an entry of mcpServers in ~/.claude.json.
type claudeServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

func newMCPImportCmd(a *App) *cobra.Command {
	var dir string
	var apply bool
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Inventory this host's MCP servers and what can come in",
		Long: `Import lists the MCP servers this host already uses — the Docker MCP Toolkit's enabled
servers (registry.yaml under ABOX_DOCKER_MCP_HOME, default ~/.docker/mcp) and Claude Code's
mcpServers (ABOX_CLAUDE_CONFIG, default ~/.claude.json) — and says for each whether it can run
in the sandbox: a catalog server comes in as a server, an https URL as a remote server; the
Docker MCP gateway itself (MCP_DOCKER) and local stdio commands do not, and the reason is shown.
--apply declares the importable ones. Headers are never imported: they may hold credentials.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runMCPImport(c.Context(), a, dir, apply) },
	}
	addDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&apply, "apply", false, "declare the importable servers in agentbox.yaml")
	return cmd
}

func runMCPImport(ctx context.Context, a *App, dir string, apply bool) error {
	p, err := a.loadProject(dir)
	if err != nil {
		return err
	}
	cat, err := catalog.Load(a.mcpHome(), p.custom)
	if err != nil {
		return err
	}
	found, err := a.hostServers(p.ws)
	if err != nil {
		return err
	}
	rows := classifyImports(found, cat, p.manifest)
	if len(rows) == 0 {
		fmt.Fprintln(a.Out, "no MCP servers configured on this host")
		return nil
	}
	table(a.Out, importTable(rows))
	todo := importable(rows)
	switch {
	case len(todo) == 0:
		return nil
	case !apply:
		fmt.Fprintln(a.Out, "next: `abox mcp import --apply` declares the importable ones")
		return nil
	}
	if _, err := a.mutate(ctx, p, func(d *manifest.Doc) error { return applyImports(d, todo) }); err != nil {
		return err
	}
	for _, r := range todo {
		linef(a.Out, "declared %s (%s)", r.Name, r.Import) // names and URLs may come from the workspace's .mcp.json
		if r.headers {
			linef(a.Out, "  its headers were not imported: add them from a secret with `abox mcp add-remote %s --url %s --header 'Name: ${VAR}' --secret NAME=VAR`", r.Name, r.URL)
		}
	}
	fmt.Fprintln(a.Out, "next: `abox up` starts them in the gateway")
	return nil
}

// hostServers reads the Toolkit's registry.yaml and Claude Code's configuration (its global
// servers and those of this workspace). Missing files are empty.
func (a *App) hostServers(ws string) ([]hostServer, error) {
	var out []hostServer
	data, err := os.ReadFile(filepath.Join(a.mcpHome(), "registry.yaml"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var reg struct {
		Registry map[string]any `yaml:"registry"`
	}
	if err := yaml.Unmarshal(data, &reg); err != nil {
		return nil, errorf("fix or remove the file", "reading the Docker MCP Toolkit registry: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(reg.Registry)) {
		out = append(out, hostServer{Name: name, Where: "Docker MCP Toolkit"})
	}
	path := a.getenv("ABOX_CLAUDE_CONFIG")
	if path == "" {
		path = filepath.Join(a.getenv("HOME"), ".claude.json")
	}
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	} else if err != nil {
		return nil, err
	}
	var cc struct {
		MCPServers map[string]claudeServer `json:"mcpServers"`
		Projects   map[string]struct {
			MCPServers map[string]claudeServer `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &cc); err != nil {
		return nil, errorf("fix the file, or point ABOX_CLAUDE_CONFIG elsewhere", "reading %s: %v", path, err)
	}
	out = append(out, claudeServers(cc.MCPServers, "~/.claude.json")...)
	return append(out, claudeServers(cc.Projects[ws].MCPServers, "~/.claude.json (this project)")...), nil
}

func claudeServers(m map[string]claudeServer, where string) []hostServer {
	var out []hostServer
	for _, name := range slices.Sorted(maps.Keys(m)) {
		s := m[name]
		h := hostServer{Name: name, Where: where, URL: s.URL, headers: len(s.Headers) > 0, Transport: manifest.DefaultTransport}
		if s.Type == "sse" {
			h.Transport = "sse"
		}
		switch {
		case name == "MCP_DOCKER" || (filepath.Base(s.Command) == "docker" && slices.Contains(s.Args, "mcp")):
			h.Import, h.Reason = importNo, "it is the Docker MCP gateway itself; abox runs its own, per profile"
		case s.URL != "":
			h.Import = importRemote
		default:
			h.Import, h.Reason = importNo, "a local stdio command: it would run on the host, outside any sandbox"
		}
		out = append(out, h)
	}
	return out
}

// classifyImports gives every found server its answer.
func classifyImports(found []hostServer, cat *catalog.Catalog, m *manifest.Manifest) []hostServer {
	out := make([]hostServer, 0, len(found))
	for _, h := range found {
		switch {
		case h.Where == "Docker MCP Toolkit":
			if _, ok := cat.Lookup(h.Name); ok {
				h.Import = importServer
			} else {
				h.Import, h.Reason = importNo, "in no catalog abox can read"
			}
		case h.Import == importRemote:
			if u, err := url.Parse(h.URL); err != nil || u.Scheme != "https" {
				h.Import, h.Reason = importNo, "not an https URL; the gateway proxies only https servers"
			}
		}
		if h.Import != importNo && !manifest.IsServerName(h.Name) {
			h.Import, h.Reason = importNo, "its name is not a valid server name"
		}
		if h.Import != importNo && m.IsDeclared(h.Name) {
			h.Import, h.Reason = importHave, "already in agentbox.yaml"
		}
		out = append(out, h)
	}
	return out
}

// importable returns the rows --apply declares, the first of each name only.
func importable(rows []hostServer) []hostServer {
	var out []hostServer
	seen := map[string]bool{}
	for _, r := range rows {
		if (r.Import == importServer || r.Import == importRemote) && !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	return out
}

func applyImports(d *manifest.Doc, rows []hostServer) error {
	for _, r := range rows {
		var err error
		if r.Import == importServer {
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

func importTable(rows []hostServer) [][]string {
	out := [][]string{{"SERVER", "ON THE HOST", "IMPORT"}}
	for _, r := range rows {
		answer := r.Import
		switch r.Import {
		case importServer, importRemote:
			answer = "yes, as a " + r.Import
		case importNo, importHave:
			answer = r.Import + ": " + r.Reason
		}
		out = append(out, []string{termtext.Line(r.Name), r.Where, answer})
	}
	return out
}
