//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultMCPConfig is where abox puts the agent's MCP configuration.
const defaultMCPConfig = "/opt/abox/mcp.json"

const mcpCallUsage = `usage: claude mcp-call [--mcp-config PATH]... [--server NAME] list
       claude mcp-call [...] call TOOL [JSON-ARGS]
       claude mcp-call [...] raw JSON-RPC
       claude mcp-call [...] --repeat N list | call TOOL [JSON-ARGS]   latencies as JSON (mcp_bench.go)
The configuration defaults to $STANDIN_MCP_CONFIG, else ` + defaultMCPConfig + `; the server to the
first by name. Results are printed as JSON; call exits 1 when the tool reports an error. With
STANDIN_MCP_NO_DELETE=1 the session is left open at exit, as Claude Code leaves it (no DELETE).`

// mcpCall is the stand-in's MCP client for tests: it talks to the server an agent would use,
// with the headers of its configuration, and prints what came back as JSON.
func mcpCall(args []string, stdout, stderr io.Writer) int {
	var configs []string
	var server string
	repeat := 0
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		if len(args) < 2 {
			fmt.Fprintln(stderr, mcpCallUsage)
			return 2
		}
		switch args[0] {
		case "--mcp-config":
			configs = append(configs, args[1])
		case "--server":
			server = args[1]
		case "--repeat":
			n, err := benchCount(args[1])
			if err != nil {
				fmt.Fprintln(stderr, "mcp-call:", err)
				return 2
			}
			repeat = n
		default:
			fmt.Fprintln(stderr, mcpCallUsage)
			return 2
		}
		args = args[2:]
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, mcpCallUsage)
		return 2
	}
	s, err := pickServer(configs, server)
	if err != nil {
		fmt.Fprintln(stderr, "mcp-call:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if repeat > 0 {
		return mcpBench(ctx, s, args, repeat, stdout, stderr)
	}
	var out any
	switch {
	case args[0] == "list" && len(args) == 1:
		out, err = listTools(ctx, s)
	case args[0] == "call" && (len(args) == 2 || len(args) == 3):
		var res *mcp.CallToolResult
		res, err = callTool(ctx, s, args[1], append(args[2:], "{}")[0])
		if err == nil && res.IsError {
			defer func() { printJSON(stdout, res) }()
			return 1
		}
		out = res
	case args[0] == "raw" && len(args) == 2:
		out, err = raw(ctx, s, args[1])
	default:
		fmt.Fprintln(stderr, mcpCallUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcp-call:", err)
		return 1
	}
	printJSON(stdout, out)
	return 0
}

func printJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "%s\n", b)
}

// pickServer loads the configuration and returns the named server, or the first by name.
func pickServer(configs []string, name string) (mcpServer, error) {
	if len(configs) == 0 {
		p := os.Getenv("STANDIN_MCP_CONFIG")
		if p == "" {
			p = defaultMCPConfig
		}
		configs = []string{p}
	}
	servers, err := loadMCPConfigs(configs)
	if err != nil {
		return mcpServer{}, err
	}
	if name == "" {
		names := slices.Sorted(maps.Keys(servers))
		if len(names) == 0 {
			return mcpServer{}, errNoServer
		}
		name = names[0]
	}
	s, ok := servers[name]
	if !ok {
		return mcpServer{}, fmt.Errorf("no MCP server %q in %s", name, strings.Join(configs, ", "))
	}
	return s, nil
}

func listTools(ctx context.Context, s mcpServer) (*mcp.ListToolsResult, error) {
	cs, err := connect(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", s.URL, err)
	}
	defer release(s, cs)
	return cs.ListTools(ctx, nil)
}

func callTool(ctx context.Context, s mcpServer, tool, args string) (*mcp.CallToolResult, error) {
	var arguments map[string]any
	if err := json.Unmarshal([]byte(args), &arguments); err != nil {
		return nil, fmt.Errorf("arguments of %s: %w", tool, err)
	}
	cs, err := connect(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", s.URL, err)
	}
	defer release(s, cs)
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
}

// rawReply is what raw prints: the HTTP exchange, not an MCP interpretation of it.
type rawReply struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type,omitempty"`
	SessionID   string `json:"session_id,omitempty"`
	Body        string `json:"body"`
}

// raw POSTs one JSON-RPC message to an http server as a streamable-HTTP client would, without
// initializing a session first.
func raw(ctx context.Context, s mcpServer, body string) (*rawReply, error) {
	if s.URL == "" {
		return nil, fmt.Errorf("raw needs an http server, not %s", s.Type)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	return &rawReply{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"),
		SessionID: resp.Header.Get("Mcp-Session-Id"), Body: string(b)}, nil
}
