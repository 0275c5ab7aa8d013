package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
)

func newGatewayCmd(a *App) *cobra.Command {
	return groupCmd("gateway", "Manage the per-profile MCP gateway",
		newGatewayUpCmd(a), newGatewayDownCmd(a), newGatewayStatusCmd(a), newGatewayUpdateCmd(a))
}

type gatewayUpOptions struct {
	dir   string
	force bool
}

func newGatewayUpCmd(a *App) *cobra.Command {
	var opts gatewayUpOptions
	cmd := &cobra.Command{
		Use:   "up [PROFILE]",
		Short: "Start or reconcile a profile's gateway",
		Long: `Up makes the profile's gateway serve exactly what its bound projects declare (abox init,
render, up and the mcp commands bind a project). It checks the servers against the catalogs,
pulls missing server images, writes the union catalog, and creates the container, or recreates
it when anything it was started from changed, it is stopped, or --force is given. It then
probes it with an MCP initialize and tools/list from inside the network.

PROFILE defaults to the profile of the project in the current directory (or --dir).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runGatewayUp(c.Context(), a, opts, args) },
	}
	addDirFlag(cmd, &opts.dir)
	cmd.Flags().BoolVar(&opts.force, "force", false, "recreate the gateway even if nothing changed")
	return cmd
}

func runGatewayUp(ctx context.Context, a *App, o gatewayUpOptions, args []string) error {
	profile, p, err := a.profileArg(o.dir, args)
	if err != nil {
		return err
	}
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	prefer := ""
	if p != nil {
		prefer = artifact.NetdImage(p.State)
	}
	if err := a.reconcileGateway(ctx, profile, o.force, prefer); err != nil {
		return err
	}
	return a.sweepServers(ctx, a.Out)
}

func newGatewayDownCmd(a *App) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "down [PROFILE]",
		Short: "Stop and remove a profile's gateway (its projects stay bound)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			profile, _, err := a.profileArg(dir, args)
			if err != nil {
				return err
			}
			if err := a.requireDaemon(c.Context()); err != nil {
				return err
			}
			removed, err := a.gatewayManager().Down(c.Context(), profile)
			if err != nil {
				return withHint(err, "retry with --verbose to see the docker commands")
			}
			if !removed {
				fmt.Fprintf(a.Out, "%s is not there; nothing to remove\n", gateway.Name(profile))
			} else {
				fmt.Fprintf(a.Out, "removed %s; `abox gateway up %s` starts it again\n", gateway.Name(profile), profile)
			}
			return a.sweepServers(c.Context(), a.Out)
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

// profileArg returns the profile named by args, or else the one of the project at dir (which
// it returns too, when there is one).
func (a *App) profileArg(dir string, args []string) (string, *project.Project, error) {
	if len(args) == 1 {
		cfg, _, ps, err := a.loadConfig()
		if err != nil {
			return "", nil, err
		}
		if _, ok := cfg.Profiles[args[0]]; !ok {
			return "", nil, errorf("list them with `abox gateway status`", "profile %q is not configured in %s", args[0], ps.ConfigFile())
		}
		p, _ := a.loadProject(dir)
		if p != nil && p.Manifest.Profile != args[0] {
			p = nil
		}
		return args[0], p, nil
	}
	p, err := a.loadProject(dir)
	if err != nil {
		return "", nil, withHint(err, "name the profile (`abox gateway up PROFILE`), or run in a project directory")
	}
	return p.Manifest.Profile, p, nil
}
