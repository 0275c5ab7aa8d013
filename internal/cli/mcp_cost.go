package cli

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/remedy"
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
	pol, err := artifact.ReadNetdPolicy(p.State.Artifacts())
	if errors.Is(err, artifact.ErrNoNetdPolicy) {
		return errorf("run `abox up` to render it", "reading the netd policy: %v", err)
	} else if err != nil {
		return err
	}
	m := p.Manifest
	rep, err := toolcost.Estimate(pol.MCP, toolcost.Project{Name: m.Project, Narrowed: m.Tools,
		Version: p.Config.ClaudeCode.Version, AgentEnv: p.Config.AgentEnv, EnvSecrets: m.EnvSecrets},
		func() ([]json.RawMessage, error) { return a.runningTools(ctx, m.Profile) })
	var ns *toolcost.NoServersError
	switch {
	case errors.As(err, &ns):
		return withHint(err, "declare one with `abox mcp add SERVER`")
	case err != nil:
		return err
	}
	if jsonOut {
		return a.writeJSON(rep)
	}
	rep.WriteText(a.Out)
	return nil
}

// runningTools lists the tools of the profile's running gateway ([gateway.RunningTools]), once
// the daemon answers.
func (a *App) runningTools(ctx context.Context, profile string) ([]json.RawMessage, error) {
	if err := a.requireDaemon(ctx); err != nil {
		return nil, err
	}
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	res, err := gateway.RunningTools(ctx, a.gatewayEnv(cfg, custom, ps), profile)
	if err != nil {
		return nil, remedy.RunningTools(err, profile)
	}
	return res.Tools, nil
}
