//go:build e2e

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// builtinServers are the MCP servers the stub gateway can "run", and the tools each offers.
// --servers and --tools narrow this set exactly as they narrow the real gateway's catalog.
var builtinServers = map[string][]string{
	"echo":    {"echo"},
	"math":    {"add"},
	"whoami":  {"whoami"},
	"secrets": {"secret_env"},
	// notes has two tools, so that a project declaring it un-narrowed has something to narrow.
	"notes": {"note_read", "note_search"},
}

// enabledTools applies --servers (nil: all) and --tools (empty: all) to builtinServers. It
// returns the enabled tools as server:tool and logs the servers it can neither run in process
// nor spawn.
func enabledTools(servers, tools []string, cat catalog, log *slog.Logger) []string {
	if servers == nil {
		for name := range builtinServers {
			servers = append(servers, name)
		}
	}
	var out []string
	for _, srv := range servers {
		ts, ok := builtinServers[srv]
		if !ok {
			switch entry, inCatalog := cat.Registry[srv]; {
			case !inCatalog:
				log.Warn("server", "server", srv, "error", "MCP server not found")
			case entry.Image == "":
				log.Warn("server", "server", srv, "error", "the stub cannot run this server: 0 tools")
			}
			continue // a catalog server with an image is spawned: see spawnedServers
		}
		for _, t := range ts {
			if toolAllowed(tools, srv, t) {
				out = append(out, srv+":"+t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// toolAllowed implements the real gateway's --tools entries: tool, server:tool, server:*, *.
func toolAllowed(allow []string, server, tool string) bool {
	if len(allow) == 0 {
		return true
	}
	for _, a := range allow {
		if a == "*" || a == tool || a == server+":"+tool || a == server+":*" {
			return true
		}
	}
	return false
}

// catalog is the part of a docker/mcp-gateway catalog file the stub reads.
type catalog struct {
	Registry map[string]catalogServer `yaml:"registry"`
}

type catalogServer struct {
	Image          string   `yaml:"image"`
	Command        []string `yaml:"command"`
	LongLived      bool     `yaml:"longLived"`
	DisableNetwork bool     `yaml:"disableNetwork"`
	User           string   `yaml:"user"`
	ExtraHosts     []string `yaml:"extraHosts"`
	Secrets        []struct {
		Name string `yaml:"name"`
		Env  string `yaml:"env"`
	} `yaml:"secrets"`
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
}

var errOutsideCatalogs = errors.New("local file path must resolve within Docker MCP catalogs directory")

// loadCatalogs reads --catalog and --additional-catalog files as the real gateway does: a
// relative name is under $HOME/.docker/mcp/catalogs, an absolute path must resolve inside it,
// a missing file is silently empty, later files win, and URLs are skipped (the stub is offline).
func loadCatalogs(refs []string, log *slog.Logger) (catalog, error) {
	cat := catalog{Registry: map[string]catalogServer{}}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	root := filepath.Join(home, ".docker", "mcp", "catalogs")
	for _, ref := range refs {
		if strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") {
			log.Info("catalog", "ref", ref, "skipped", "remote catalogs are not fetched by the stub")
			continue
		}
		path := ref
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		if rel, err := filepath.Rel(root, path); err != nil || strings.HasPrefix(rel, "..") {
			return cat, fmt.Errorf("catalog %s: %w", ref, errOutsideCatalogs)
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			log.Warn("catalog", "ref", ref, "error", "not found: treated as empty")
			continue
		}
		if err != nil {
			return cat, err
		}
		var c catalog
		if err := yaml.Unmarshal(data, &c); err != nil {
			return cat, fmt.Errorf("catalog %s: %w", ref, err)
		}
		for name, s := range c.Registry {
			cat.Registry[name] = s
		}
		log.Info("catalog", "ref", ref, "servers", len(c.Registry))
	}
	return cat, nil
}

// loadSecrets reads the first readable file of a colon-separated --secrets list; entries are
// name=value lines, # comments skipped, quotes kept. "docker-desktop" entries are skipped: the
// stub has no secrets engine.
func loadSecrets(spec string) (map[string]string, error) {
	for _, p := range strings.Split(spec, ":") {
		if p == "" || p == "docker-desktop" {
			continue
		}
		if m, err := readSecretsFile(p); err == nil {
			return m, nil
		}
	}
	return map[string]string{}, nil
}

func readSecretsFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: line without '='", path)
		}
		m[k] = v
	}
	return m, sc.Err()
}

// spawnedEnv is the environment the real gateway would give the servers it spawns: each enabled
// catalog server's declared secrets (<UNKNOWN> when missing) and plain env. If the catalog
// declares no secrets, every secret is visible under its own name, so tests work without one.
func spawnedEnv(cat catalog, servers []string, secrets map[string]string) map[string]string {
	env := map[string]string{}
	declared := false
	for name, s := range cat.Registry {
		if servers != nil && !slices.Contains(servers, name) {
			continue
		}
		for _, sec := range s.Secrets {
			declared = true
			v, ok := secrets[sec.Name]
			if !ok {
				v = "<UNKNOWN>"
			}
			env[sec.Env] = v
		}
		for _, e := range s.Env {
			env[e.Name] = e.Value
		}
	}
	if !declared {
		for k, v := range secrets {
			env[k] = v
		}
	}
	return env
}

// caller is what the gateway knows about the client of one MCP session.
type caller struct {
	remote, userAgent string
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}
type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}
type secretIn struct {
	Name string `json:"name" jsonschema:"environment variable of the spawned server"`
}
type noIn struct{}

// newMCPServer builds the MCP server of one session with the enabled tools.
func (g *gateway) newMCPServer(c caller) *mcp.Server {
	var opts mcp.ServerOptions
	if len(g.spawned) > 0 {
		opts.InitializedHandler = g.releaseOnClose
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "abox e2e gateway stub", Version: "1.0.0"}, &opts)
	s.AddReceivingMiddleware(g.countSessions)
	g.addSpawnedTools(s, c)
	for _, st := range g.tools {
		_, tool, _ := strings.Cut(st, ":")
		switch tool {
		case "echo":
			mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back"},
				func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
					return g.reply(req, c, in, in.Text)
				})
		case "add":
			mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers"},
				func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
					return g.reply(req, c, in, fmt.Sprint(in.A+in.B))
				})
		case "whoami":
			mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Describe the caller as the gateway sees it"},
				func(ctx context.Context, req *mcp.CallToolRequest, in noIn) (*mcp.CallToolResult, any, error) {
					b, _ := json.Marshal(map[string]string{"gateway": g.name, "remote": c.remote,
						"user_agent": c.userAgent, "session": req.Session.ID()})
					return g.reply(req, c, in, string(b))
				})
		case "note_search":
			mcp.AddTool(s, &mcp.Tool{Name: "note_search", Description: "Search the notes for a text and return the matching titles"},
				func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
					return g.reply(req, c, in, "found: "+in.Text)
				})
		case "note_read":
			mcp.AddTool(s, &mcp.Tool{Name: "note_read", Description: "Read one note by its title"},
				func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
					return g.reply(req, c, in, "note: "+in.Text)
				})
		case "secret_env":
			mcp.AddTool(s, &mcp.Tool{Name: "secret_env", Description: "Return an environment variable of the spawned server"},
				func(ctx context.Context, req *mcp.CallToolRequest, in secretIn) (*mcp.CallToolResult, any, error) {
					v, ok := g.env[in.Name]
					if !ok {
						return g.fail(req, c, in, "not set: "+in.Name)
					}
					return g.reply(req, c, in, v)
				})
		}
	}
	return s
}

func (g *gateway) reply(req *mcp.CallToolRequest, c caller, in any, text string) (*mcp.CallToolResult, any, error) {
	g.logCall(req, c, in, false)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}

func (g *gateway) fail(req *mcp.CallToolRequest, c caller, in any, text string) (*mcp.CallToolResult, any, error) {
	g.logCall(req, c, in, true)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}

// logCall logs one tools/call. Arguments are logged whole: the stub never holds real secrets.
func (g *gateway) logCall(req *mcp.CallToolRequest, c caller, in any, isErr bool) {
	g.log.Info("call", "tool", req.Params.Name, "args", in, "session", req.Session.ID(),
		"remote", c.remote, "is_error", isErr)
}
