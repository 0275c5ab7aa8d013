//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServer is one entry of an MCP configuration ({"mcpServers": {name: entry}}), as Claude Code
// reads it from --mcp-config and .mcp.json.
type mcpServer struct {
	Type    string            `json:"type,omitempty"` // http, sse or stdio; inferred when empty
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

type mcpConfig struct {
	MCPServers map[string]mcpServer `json:"mcpServers"`
}

// loadMCPConfigs merges the --mcp-config values, each a file path or a JSON string; later ones
// win on a name clash. ${VAR} and ${VAR:-default} are expanded, as Claude Code does.
func loadMCPConfigs(values []string) (map[string]mcpServer, error) {
	all := map[string]mcpServer{}
	for _, v := range values {
		data := []byte(v)
		if !strings.HasPrefix(strings.TrimSpace(v), "{") {
			var err error
			if data, err = os.ReadFile(v); err != nil {
				return nil, fmt.Errorf("reading MCP config %s: %w", v, err)
			}
		}
		var c mcpConfig
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("parsing MCP config %s: %w", v, err)
		}
		for name, s := range c.MCPServers {
			all[name] = s.expand()
		}
	}
	return all, nil
}

func (s mcpServer) expand() mcpServer {
	s.URL = expandEnv(s.URL)
	s.Command = expandEnv(s.Command)
	s.Headers = expandMap(s.Headers)
	s.Env = expandMap(s.Env)
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		args[i] = expandEnv(a)
	}
	s.Args = args
	if s.Type == "" {
		s.Type = "stdio"
		if s.URL != "" {
			s.Type = "http"
		}
	}
	return s
}

func expandMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = expandEnv(v)
	}
	return out
}

func expandEnv(s string) string {
	return os.Expand(s, func(k string) string {
		name, def, hasDef := strings.Cut(k, ":-")
		if v, ok := os.LookupEnv(name); ok && (v != "" || !hasDef) {
			return v
		}
		return def
	})
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// connect opens an MCP client session to s.
func connect(ctx context.Context, s mcpServer) (*mcp.ClientSession, error) {
	var t mcp.Transport
	switch s.Type {
	case "http", "streamable-http":
		t = &mcp.StreamableClientTransport{
			Endpoint:             s.URL,
			HTTPClient:           &http.Client{Transport: headerTransport{s.Headers, http.DefaultTransport}},
			MaxRetries:           -1,
			DisableStandaloneSSE: true,
		}
	case "sse":
		t = &mcp.SSEClientTransport{
			Endpoint:   s.URL,
			HTTPClient: &http.Client{Transport: headerTransport{s.Headers, http.DefaultTransport}},
		}
	case "stdio":
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Env = os.Environ()
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		t = &mcp.CommandTransport{Command: cmd}
	default:
		return nil, fmt.Errorf("unknown MCP server type %q", s.Type)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: Version}, nil)
	return c.Connect(ctx, t, nil)
}

// release ends a client session. By default it is the go-sdk client's Close, which DELETEs a
// streamable-HTTP session; with STANDIN_MCP_NO_DELETE=1 an HTTP session is left open, as the real
// Claude Code (2.1.3xx) leaves its sessions when it exits: no DELETE ever reaches the server.
func release(s mcpServer, cs *mcp.ClientSession) {
	if os.Getenv("STANDIN_MCP_NO_DELETE") == "1" && s.URL != "" {
		return
	}
	cs.Close()
}

// mcpStatus is one entry of the init event's mcp_servers.
type mcpStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// probeMCP connects to every server as Claude Code does at start-up and returns their statuses
// and the tools they offer, named mcp__<server>__<tool>.
func probeMCP(servers map[string]mcpServer) ([]mcpStatus, []string) {
	timeout := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("STANDIN_MCP_TIMEOUT")); err == nil {
		timeout = d
	}
	type probe struct {
		status string
		tools  []string
	}
	results := map[string]probe{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, s := range servers {
		wg.Go(func() {
			status, tools := probeOne(s, timeout)
			mu.Lock()
			defer mu.Unlock()
			for i, tool := range tools {
				tools[i] = "mcp__" + name + "__" + tool
			}
			results[name] = probe{status, tools}
		})
	}
	wg.Wait()
	var statuses []mcpStatus
	var tools []string
	for _, name := range slices.Sorted(maps.Keys(results)) {
		statuses = append(statuses, mcpStatus{name, results[name].status})
		tools = append(tools, results[name].tools...)
	}
	return statuses, tools
}

func probeOne(s mcpServer, timeout time.Duration) (string, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cs, err := connect(ctx, s)
	if err != nil {
		if isUnauthorized(err) {
			return "needs-auth", nil
		}
		return "failed", nil
	}
	defer release(s, cs)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return "failed", nil
	}
	var tools []string
	for _, t := range res.Tools {
		tools = append(tools, t.Name)
	}
	return "connected", tools
}

// isUnauthorized reports whether err is the server refusing our credentials.
func isUnauthorized(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "Unauthorized"))
}

var errNoServer = errors.New("no MCP server configured")
