//go:build e2e

package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// spawnedServers returns the catalog servers --servers names that are not built in and have an
// image: the stub runs those as containers. Without --servers it spawns none.
func spawnedServers(servers []string, cat catalog) []spawnedServer {
	var out []spawnedServer
	for _, name := range servers {
		if _, builtin := builtinServers[name]; builtin {
			continue
		}
		if spec, ok := cat.Registry[name]; ok && spec.Image != "" {
			out = append(out, spawnedServer{name: name, spec: spec})
		}
	}
	return out
}

// spawnedTools holds the tools each spawned server listed, at start-up or in a refresh.
type spawnedTools struct {
	mu    sync.Mutex
	tools map[string][]*mcp.Tool
}

func (st *spawnedTools) set(server string, tools []*mcp.Tool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tools == nil {
		st.tools = map[string][]*mcp.Tool{}
	}
	st.tools[server] = tools
}

func (st *spawnedTools) get(server string) []*mcp.Tool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.tools[server]
}

// startSpawning sets the gateway up to spawn its catalog servers with docker: it finds the
// gateway container's networks (with DOCKER_MCP_IN_CONTAINER=1, as the real gateway) and lists
// every spawned server once, through a container of its own.
func (g *gateway) startSpawning(ctx context.Context, f gatewayFlags) {
	if len(g.spawned) == 0 {
		return
	}
	d := dockerSpawner{cpus: f.cpus, memory: f.memory, dind: os.Getenv("DOCKER_MCP_IN_DIND") == "1",
		secrets: g.secrets, stderr: g.stderr}
	if os.Getenv("DOCKER_MCP_IN_CONTAINER") == "1" {
		networks, err := guessNetworks(ctx)
		if err != nil {
			g.log.Warn("networks", "error", err.Error())
		}
		d.networks = networks
		g.log.Info("networks", "networks", networks)
	}
	g.pool.spawner = d
	g.listSpawned(ctx)
}

// listSpawned lists the tools of every spawned server in parallel, each through a throwaway
// client, never kept. A server that fails contributes no tools, and the gateway still starts.
func (g *gateway) listSpawned(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range g.spawned {
		wg.Go(func() {
			c, err := g.pool.acquire(ctx, s, nil, "list")
			if err != nil {
				g.log.Warn("server", "server", s.name, "error", fmt.Sprintf("Can't start %s: %v", s.name, err))
				return
			}
			res, err := c.cs.ListTools(ctx, nil)
			g.pool.release(c)
			if err != nil {
				g.log.Warn("server", "server", s.name, "error", fmt.Sprintf("Can't list tools %s: %v", s.name, err))
				return
			}
			g.spawnedTools.set(s.name, res.Tools)
			g.log.Info("server", "server", s.name, "tools", len(res.Tools))
		})
	}
	wg.Wait()
}

// addSpawnedTools adds the enabled tools of every spawned server to a session's MCP server.
// Tools a later refresh lists reach the sessions opened after it: the stub does not change the
// tools of a session already open, where the real gateway's shared server would.
func (g *gateway) addSpawnedTools(s *mcp.Server, c caller) {
	for _, srv := range g.spawned {
		for _, tool := range g.spawnedTools.get(srv.name) {
			if !toolAllowed(g.toolsFlag, srv.name, tool.Name) {
				continue
			}
			if tool.InputSchema == nil { // the go-sdk server wants one
				t := *tool
				t.InputSchema = map[string]any{"type": "object"}
				tool = &t
			}
			s.AddTool(tool, g.forward(srv, c))
		}
	}
}

// forward calls a tool of a spawned server through a client of the session, and logs the call
// with how long it took, the client's release included: what the caller waited.
func (g *gateway) forward(srv spawnedServer, c caller) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		begin := time.Now()
		res := g.callSpawned(ctx, srv, req)
		g.log.Info("call", "tool", req.Params.Name, "server", srv.name, "args", req.Params.Arguments,
			"session", req.Session.ID(), "remote", c.remote, "is_error", res.IsError, "ms", millis(time.Since(begin)))
		return res, nil
	}
}

func (g *gateway) callSpawned(ctx context.Context, srv spawnedServer, req *mcp.CallToolRequest) *mcp.CallToolResult {
	cl, err := g.pool.acquire(ctx, srv, req.Session, "call")
	if err != nil {
		return text(fmt.Sprintf("Can't start %s: %v", srv.name, err), true)
	}
	defer g.pool.release(cl)
	res, err := cl.cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
	if err != nil {
		return text(err.Error(), true)
	}
	return res
}

// releaseOnClose releases the session's kept clients when it closes, for a session that sent
// initialized, as the real gateway's InitializedHandler does.
func (g *gateway) releaseOnClose(_ context.Context, req *mcp.InitializedRequest) {
	ss := req.Session
	go func() {
		_ = ss.Wait()
		g.pool.releaseSession(ss.ID())
	}()
}

// spawnedNames returns the names of the spawned servers, for the start log.
func (g *gateway) spawnedNames() []string {
	var names []string
	for _, s := range g.spawned {
		names = append(names, s.name)
	}
	return slices.Sorted(slices.Values(names))
}
