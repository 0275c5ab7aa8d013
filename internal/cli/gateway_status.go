package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/remedy"
)

type gatewayStatusOptions struct {
	tools, json bool
}

func newGatewayStatusCmd(a *App) *cobra.Command {
	var opts gatewayStatusOptions
	cmd := &cobra.Command{
		Use:   "status [PROFILE]",
		Short: "Show gateways, their servers and tools",
		Long: `Status shows every profile's gateway (or PROFILE's): whether it runs and answers MCP, its URL
on the abox network, its projects, servers and remote servers, and any port it publishes on the
host, which is a problem: the gateway must be reachable only through netd. With --tools it lists
the tools the gateway serves (the union; each project's netd narrows it further).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runGatewayStatus(c.Context(), a, opts, args) },
	}
	var dir string
	addDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&opts.tools, "tools", false, "list the tools of each healthy gateway")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func runGatewayStatus(ctx context.Context, a *App, o gatewayStatusOptions, args []string) error {
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return err
	}
	env := a.gatewayEnv(cfg, custom, ps)
	profiles, err := env.Profiles(args)
	if err != nil {
		return remedy.Gateway(err, "")
	}
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	out, err := gateway.Statuses(ctx, env, profiles, o.tools)
	if err != nil {
		return remedy.Gateway(err, "")
	}
	if o.json {
		return a.writeJSON(out)
	}
	for _, st := range out {
		st.WriteText(a.Out, a.paint)
	}
	return nil
}
