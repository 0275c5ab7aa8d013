package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/termtext"
)

type gatewayStatusOptions struct {
	tools, json bool
}

// gatewayStatus is one profile's line of `gateway status`; its JSON form is stable.
type gatewayStatus struct {
	Profile   string `json:"profile"`
	Container string `json:"container"`
	State     string `json:"state"`  // running, exited, …, or missing
	Health    string `json:"health"` // healthy, unhealthy, unknown (not probed), or "" when not running
	Detail    string `json:"detail,omitempty"`
	URL       string `json:"url"`
	Image     string `json:"image,omitempty"`
	// Current is false when the container differs from what `gateway up` would start now.
	Current        bool     `json:"current"`
	Projects       []string `json:"projects"`
	Servers        []string `json:"servers"` // from the container's own --servers
	Remote         []string `json:"remote"`
	PublishedPorts []string `json:"published_ports"`
	Tools          []string `json:"tools,omitempty"`
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
	var out []gatewayStatus
	for _, prof := range profiles {
		st, err := a.statusOf(ctx, cfg, custom, ps, prof, o.tools)
		if err != nil {
			return err
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

// statusOf gathers one profile's status from the machine: the container, its arguments, its
// ports and a live probe.
func (a *App) statusOf(ctx context.Context, cfg *config.Config, custom config.CustomServers, ps paths.Paths, prof string, tools bool) (gatewayStatus, error) {
	plan, token, err := a.gatewayPlan(ctx, cfg, custom, ps, prof, false)
	if err != nil {
		return gatewayStatus{}, err
	}
	st := gatewayStatus{Profile: prof, Container: gateway.Name(prof), URL: plan.URL(), State: "missing",
		Projects: nonNil(plan.Union.Projects), Servers: []string{}, Remote: nonNil(plan.Union.RemoteNames()), PublishedPorts: []string{}}
	mgr := a.gatewayManager()
	ct, err := mgr.Inspect(ctx, prof)
	if err != nil || ct == nil {
		return st, err
	}
	st.State, st.Image = ct.State.Status, ct.Config.Image
	st.Servers = nonNil(gateway.ServersOf(ct))
	st.PublishedPorts = nonNil(gateway.PublishedPorts(ct))
	st.Current = ct.Config.Labels["abox.fingerprint"] == plan.Container.Fingerprint
	if !ct.State.Running {
		return st, nil
	}
	st.Health = "unknown"
	img := a.probeImage(ctx, ps, plan, "")
	if img == "" {
		st.Detail = "no netd image to probe from"
		return st, nil
	}
	res, err := mgr.Probe(ctx, prof, cfg.Network, img, plan.Container.Port, token)
	switch {
	case err != nil:
		st.Health, st.Detail = "unhealthy", gateway.Redact(err.Error(), token)
	case !res.OK:
		st.Health, st.Detail = "unhealthy", gateway.Redact(res.Error, token)
	case !res.AuthEnforced():
		st.Health, st.Detail = "open", "does not enforce its token: "+res.Auth.String()+"; abox refuses to use it"
	default:
		st.Health = "healthy"
		if tools {
			st.Tools = nonNil(res.ToolNames())
		}
	}
	return st, nil
}

func (a *App) printStatus(st gatewayStatus) {
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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
