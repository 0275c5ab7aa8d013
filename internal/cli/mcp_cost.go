package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/termtext"
	"github.com/aboxhq/abox/internal/toolcost"
)

func newMCPCostCmd(a *App) *cobra.Command {
	var dir string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Token cost of the MCP tools the agent sees, as its Claude Code sends them",
		Long: `Cost asks the running gateway for its tools, keeps those the project's netd lets the agent
see (its own narrowing, as rendered in netd.json), and estimates what they cost the model:
about one token per 4 bytes of compact JSON.

Claude Code defers MCP tools by default (tool search): every turn carries only the tool
names, and one tool's schema is loaded on demand, with its ToolSearch tool, when the model
needs it. Cost reports both figures, the names per turn and each schema per load, and the
full per-turn cost of every schema, which applies when deferral is off; it says which applies
to the configured Claude Code (claude_code.version in config.yaml) and why: the release,
ENABLE_TOOL_SEARCH or ANTHROPIC_BASE_URL in agent_env. It lists tools and servers, most
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
	pol, err := readNetdPolicy(p.State.Artifacts())
	if err != nil {
		return err
	}
	if pol.MCP == nil {
		return errorf("declare one with `abox mcp add SERVER`", "%s declares no MCP server", p.Manifest.Project)
	}
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	res, err := a.probeProfile(ctx, p.Manifest.Profile)
	if err != nil {
		return err
	}
	rep := toolcost.Of(res.Tools, pol.MCP, p.Manifest.Tools)
	rep.Price(p.Config.ClaudeCode.Version, p.Config.AgentEnv)
	rep.Client.Why += toolcost.UnreadSwitches(p.Manifest.EnvSecrets)
	if jsonOut {
		return a.writeJSON(rep)
	}
	a.printCost(rep)
	return nil
}

// readNetdPolicy reads the rendered netd.json: what netd enforces, so what the agent sees.
func readNetdPolicy(artifacts string) (*policy.Netd, error) {
	pol, err := artifact.ReadNetdPolicy(artifacts)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, errorf("run `abox up` to render it", "reading the netd policy: %v", err)
	}
	return pol, err
}

// probeProfile lists the tools of the profile's running gateway ([gateway.RunningTools]).
func (a *App) probeProfile(ctx context.Context, profile string) (*gateway.ProbeResult, error) {
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	res, err := gateway.RunningTools(ctx, a.gatewayEnv(cfg, custom, ps), profile)
	switch {
	case errors.Is(err, gateway.ErrNotRunning):
		return nil, withHint(err, "start it with `abox up`")
	case errors.Is(err, gateway.ErrNoProbeImage):
		return nil, withHint(err, "run `abox up` to build the netd image the probe runs in")
	case errors.Is(err, gateway.ErrNoAnswer):
		return nil, withHint(err, "see `abox gateway status "+profile+"`")
	case err != nil:
		return nil, a.explainGateway(err, profile)
	}
	return res, nil
}

func (a *App) printCost(rep toolcost.Report) {
	if len(rep.Tools) == 0 {
		fmt.Fprintln(a.Out, "the agent sees no tools")
		return
	}
	rows := [][]string{{"TOOL", "SERVER", "~TOKENS", "~NAME"}}
	for _, t := range rep.Tools {
		name := fmt.Sprint(t.NameTokens)
		if t.AlwaysLoad {
			name = "always loaded"
		}
		rows = append(rows, []string{termtext.Line(t.Tool), t.Server, fmt.Sprint(t.Tokens), name})
	}
	table(a.Out, rows)
	fmt.Fprintln(a.Out)
	rows = [][]string{{"SERVER", "TOOLS", "~TOKENS", "~NAMES", "SHARE"}}
	for _, s := range rep.Servers {
		rows = append(rows, []string{s.Server, fmt.Sprint(s.Tools), fmt.Sprint(s.Tokens), fmt.Sprint(s.NameTokens), fmt.Sprintf("%.0f%%", 100*s.Share)})
	}
	rows = append(rows, []string{"total", fmt.Sprint(len(rep.Tools)), fmt.Sprint(rep.Total), fmt.Sprint(rep.Names), "100%"})
	table(a.Out, rows)
	fmt.Fprintln(a.Out)
	a.printClientCost(rep)
	for _, s := range rep.Servers {
		if !s.Narrowed && s.Server != "?" && s.Tools > 1 {
			cost := fmt.Sprintf("~%d tokens per turn", s.Tokens)
			if rep.Client.Deferred {
				cost = fmt.Sprintf("~%d tokens per turn in names and ~%d in schemas as they load", s.NameTokens, s.Tokens)
			}
			linef(a.Out, "hint: %s costs %s; narrow it to the tools the agent needs: `abox mcp add %s --tool %s`",
				s.Server, cost, s.Server, strings.Join(s.ToolNames[:1], " --tool "))
			break
		}
	}
}

// printClientCost says which cost applies to the Claude Code that will run, and why.
func (a *App) printClientCost(rep toolcost.Report) {
	c := rep.Client
	deferrable := rep.Total - rep.Upfront
	threshold := fmt.Sprintf("its threshold of %d tokens (%d%% of a %d-token context window)", c.Threshold, c.Threshold*100/toolcost.ContextWindow, toolcost.ContextWindow)
	switch {
	case c.Deferred:
		linef(a.Out, "Claude Code %s defers MCP tools: %s", c.Version, c.Why)
		if c.ToolSearch == claudecode.Auto {
			linef(a.Out, "  these ~%d tokens of schemas reach %s", deferrable, threshold)
		}
		perTurn := fmt.Sprintf("~%d tokens, the names of %d tools", rep.Names, len(rep.Tools))
		if rep.Upfront > 0 {
			perTurn += fmt.Sprintf(", and ~%d for the schemas of the tools that ask to be always loaded", rep.Upfront)
		}
		linef(a.Out, "  per turn: %s", perTurn)
		linef(a.Out, "  per schema loaded on demand: ~%d to ~%d tokens (~TOKENS) when ToolSearch loads it; it then stays for the rest of the session",
			rep.MinTokens(), rep.Tools[0].Tokens)
		linef(a.Out, "  with deferral off (ENABLE_TOOL_SEARCH=false in agent_env): ~%d tokens per turn", rep.Total)
	default:
		why := c.Why
		if c.ToolSearch == claudecode.Auto {
			why += fmt.Sprintf("; these ~%d tokens stay below %s", deferrable, threshold)
		}
		linef(a.Out, "Claude Code %s sends every MCP tool schema on every turn: %s", c.Version, why)
		linef(a.Out, "  per turn: ~%d tokens", rep.Total)
		if claudecode.CompareVersions(c.Version, claudecode.ToolSearchFrom) >= 0 {
			linef(a.Out, "  deferred (ENABLE_TOOL_SEARCH=true in agent_env): ~%d tokens per turn, and each schema (~TOKENS) when ToolSearch loads it",
				rep.Names+rep.Upfront)
		}
	}
	fmt.Fprintln(a.Out)
}
