package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/termtext"
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
	profiles := cfg.ProfileNames()
	if len(args) == 1 {
		if _, ok := cfg.Profiles[args[0]]; !ok {
			return errorf("known profiles: "+strings.Join(profiles, ", "), "profile %q is not configured in %s", args[0], ps.ConfigFile())
		}
		profiles = args
	}
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	env := a.gatewayEnv(cfg, custom, ps)
	var out []gateway.Status
	for _, prof := range profiles {
		st, err := gateway.ProfileStatus(ctx, env, prof, o.tools)
		if err != nil {
			return a.explainGateway(err, prof)
		}
		out = append(out, st)
	}
	if o.json {
		return a.writeJSON(out)
	}
	for _, st := range out {
		a.printStatus(st)
	}
	return nil
}

func (a *App) printStatus(st gateway.Status) {
	state := a.paint("red", st.State)
	switch {
	case st.State == "running" && st.Health == "healthy":
		state = a.paint("green", "running, healthy")
	case st.State == "running":
		state = a.paint("yellow", "running, "+st.Health)
	}
	fmt.Fprintf(a.Out, "%s  %s  %s\n", st.Profile, st.Container, state)
	line := func(label, v string) { fmt.Fprintf(a.Out, "  %-10s %s\n", label+":", v) }
	if st.Detail != "" {
		line("detail", st.Detail)
	}
	if st.State != "missing" {
		line("url", st.URL)
	}
	line("projects", listOrNone(st.Projects))
	if st.State != "missing" {
		line("servers", listOrNone(st.Servers))
	}
	if len(st.Remote) > 0 {
		line("remote", strings.Join(st.Remote, ", ")+" (proxied by the gateway)")
	}
	if st.Tools != nil {
		line(fmt.Sprintf("tools (%d)", len(st.Tools)), termtext.Line(listOrNone(st.Tools)))
	}
	if len(st.PublishedPorts) > 0 {
		line("published", a.paint("red", strings.Join(st.PublishedPorts, ", ")+": the gateway must publish nothing; recreate it with `abox gateway up --force "+st.Profile+"`"))
	}
	if st.State != "missing" && !st.Current {
		line("drift", a.paint("yellow", "differs from what its projects declare now; `abox gateway up "+st.Profile+"` reconciles it"))
	}
	if st.State == "missing" && len(st.Projects) > 0 {
		line("next", "`abox gateway up "+st.Profile+"` starts it")
	}
}
