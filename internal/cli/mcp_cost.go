package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/termtext"
)

// toolCost is one tool the agent sees and what its definition costs per turn.
type toolCost struct {
	Tool   string `json:"tool"`
	Server string `json:"server"` // as netd logs it ([policy.MCP.Allows]); "?" if several could provide it
	Tokens int    `json:"tokens"`
}

// serverCost sums a server's tools.
type serverCost struct {
	Server    string  `json:"server"`
	Tools     int     `json:"tools"`
	Tokens    int     `json:"tokens"`
	Share     float64 `json:"share"`
	Narrowed  bool    `json:"narrowed"`
	toolNames []string
}

// costReport is `mcp cost --json`.
type costReport struct {
	Total   int          `json:"total_tokens"`
	Tools   []toolCost   `json:"tools"`
	Servers []serverCost `json:"servers"`
}

func newMCPCostCmd(a *App) *cobra.Command {
	var dir string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Per-turn token cost of the tool schemas the agent sees",
		Long: `Cost asks the running gateway for its tools, keeps those the project's netd lets the agent
see (its own narrowing, as rendered in netd.json), and estimates what their definitions cost on
every turn: about one token per 4 bytes of compact JSON. It lists tools and servers, most
expensive first, and suggests narrowing the costliest un-narrowed server.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runMCPCost(c.Context(), a, dir, jsonOut) },
	}
	addDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func runMCPCost(ctx context.Context, a *App, dir string, jsonOut bool) error {
	p, err := a.loadProject(dir)
	if err != nil {
		return err
	}
	pol, err := readNetdPolicy(p.state.Artifacts())
	if err != nil {
		return err
	}
	if pol.MCP == nil {
		return errorf("declare one with `abox mcp add SERVER`", "%s declares no MCP server", p.manifest.Project)
	}
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	res, err := a.probeProfile(ctx, p.manifest.Profile)
	if err != nil {
		return err
	}
	rep := costOf(res.Tools, pol.MCP, p.manifest.Tools)
	if jsonOut {
		return a.writeJSON(rep)
	}
	a.printCost(rep)
	return nil
}

// readNetdPolicy reads the rendered netd.json: what netd enforces, so what the agent sees.
func readNetdPolicy(artifacts string) (*policy.Netd, error) {
	data, err := os.ReadFile(filepath.Join(artifacts, render.NetdDir, policy.File))
	if err != nil {
		return nil, errorf("run `abox up` to render it", "reading the netd policy: %v", err)
	}
	return policy.Parse(data)
}

// probeProfile lists the tools of the profile's running gateway.
func (a *App) probeProfile(ctx context.Context, profile string) (*gateway.ProbeResult, error) {
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	plan, token, err := a.gatewayPlan(ctx, cfg, custom, ps, profile, false)
	if err != nil {
		return nil, err
	}
	mgr := a.gatewayManager()
	ct, err := mgr.Inspect(ctx, profile)
	if err != nil {
		return nil, err
	}
	if ct == nil || !ct.State.Running {
		return nil, errorf("start it with `abox up`", "the %s gateway is not running", profile)
	}
	img := a.probeImage(ctx, ps, plan, "")
	if img == "" {
		return nil, errorf("run `abox up` to build the netd image the probe runs in", "no netd image to probe the %s gateway from", profile)
	}
	res, err := mgr.Probe(ctx, profile, cfg.Network, img, plan.Container.Port, token)
	if err != nil {
		return nil, err
	}
	if !res.OK {
		return nil, errorf("see `abox gateway status "+profile+"`", "the %s gateway does not answer: %s", profile, gateway.Redact(res.Error, token))
	}
	return res, nil
}

// costOf keeps the tools netd lets through, exactly as netd decides and attributes them
// ([policy.MCP.Allows]), and prices each at len(compact JSON)/4.
func costOf(tools []json.RawMessage, mcp *policy.MCP, narrowed map[string][]string) costReport {
	rep := costReport{Tools: []toolCost{}, Servers: []serverCost{}}
	by := map[string]*serverCost{}
	for _, raw := range tools {
		var t struct{ Name string }
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		server, ok := mcp.Allows(t.Name)
		if !ok {
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			continue
		}
		tc := toolCost{Tool: t.Name, Server: server, Tokens: buf.Len() / 4}
		rep.Tools = append(rep.Tools, tc)
		rep.Total += tc.Tokens
		if by[server] == nil {
			_, n := narrowed[server]
			by[server] = &serverCost{Server: server, Narrowed: n}
		}
		by[server].Tools++
		by[server].Tokens += tc.Tokens
		by[server].toolNames = append(by[server].toolNames, t.Name)
	}
	sort.Slice(rep.Tools, func(i, j int) bool {
		a, b := rep.Tools[i], rep.Tools[j]
		return a.Tokens > b.Tokens || a.Tokens == b.Tokens && a.Tool < b.Tool
	})
	for _, s := range by {
		if rep.Total > 0 {
			s.Share = float64(s.Tokens) / float64(rep.Total)
		}
		rep.Servers = append(rep.Servers, *s)
	}
	sort.Slice(rep.Servers, func(i, j int) bool {
		a, b := rep.Servers[i], rep.Servers[j]
		return a.Tokens > b.Tokens || a.Tokens == b.Tokens && a.Server < b.Server
	})
	return rep
}

func (a *App) printCost(rep costReport) {
	if len(rep.Tools) == 0 {
		fmt.Fprintln(a.Out, "the agent sees no tools")
		return
	}
	rows := [][]string{{"TOOL", "SERVER", "~TOKENS"}}
	for _, t := range rep.Tools {
		rows = append(rows, []string{termtext.Line(t.Tool), t.Server, fmt.Sprint(t.Tokens)})
	}
	table(a.Out, rows)
	fmt.Fprintln(a.Out)
	rows = [][]string{{"SERVER", "TOOLS", "~TOKENS", "SHARE"}}
	for _, s := range rep.Servers {
		rows = append(rows, []string{s.Server, fmt.Sprint(s.Tools), fmt.Sprint(s.Tokens), fmt.Sprintf("%.0f%%", 100*s.Share)})
	}
	rows = append(rows, []string{"total", fmt.Sprint(len(rep.Tools)), fmt.Sprint(rep.Total), "100%"})
	table(a.Out, rows)
	for _, s := range rep.Servers {
		if !s.Narrowed && s.Server != "?" && s.Tools > 1 {
			linef(a.Out, "hint: %s costs ~%d tokens per turn; narrow it to the tools the agent needs: `abox mcp add %s --tool %s`",
				s.Server, s.Tokens, s.Server, strings.Join(s.toolNames[:1], " --tool "))
			break
		}
	}
}
