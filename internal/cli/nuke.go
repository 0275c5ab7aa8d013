package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/provision"
	"github.com/aboxhq/abox/internal/remedy"
)

type nukeOptions struct {
	dir                        string
	yes, keepAuth, includeAuth bool
}

func newNukeCmd(a *App) *cobra.Command {
	var opts nukeOptions
	cmd := &cobra.Command{
		Use:   "nuke",
		Short: "Remove this project's containers, artifacts, staged files and review copy",
		Long: `Nuke removes what abox made for this project only: its netd and agent containers (found by
label, never another project's), its rendered artifacts, staged build files and approval, and
the generated files of the .devcontainer/ review copy, and the clones of isolated runs (a
branch already collected into your repository stays, and abox merge still lands it), and the
volumes of its toolchain caches (all of the project's, whatever mounts.caches says now). It unbinds the project from its
profile's gateway, which is removed when no project needs it any more. Run history and the
manifest stay.

The ~/.claude volume holds the Claude login and is asked about separately, even with --yes:
--keep-auth keeps it without asking, --include-auth removes it without asking.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runNuke(c.Context(), a, opts) },
	}
	addDirFlag(cmd, &opts.dir)
	f := cmd.Flags()
	f.BoolVarP(&opts.yes, "yes", "y", false, "do not ask before removing containers and artifacts")
	f.BoolVar(&opts.keepAuth, "keep-auth", false, "keep the Claude login volume without asking")
	f.BoolVar(&opts.includeAuth, "include-auth", false, "remove the Claude login volume without asking")
	cmd.MarkFlagsMutuallyExclusive("keep-auth", "include-auth")
	return cmd
}

func runNuke(ctx context.Context, a *App, o nukeOptions) error {
	p, err := a.loadProject(o.dir)
	if err != nil {
		return err
	}
	if !o.yes {
		if !a.TTY {
			return errorf("run `abox nuke --yes` to confirm without a terminal", "abox nuke needs confirmation")
		}
		if !a.confirm(fmt.Sprintf("remove %s's containers, artifacts and review copy?", p.Manifest.Project)) {
			return errorf("nothing was removed", "cancelled")
		}
	}
	res, err := provision.Nuke(ctx, a.provisionEnv(p, false), p, provision.NukeOptions{RemoveLogin: a.removeLogin(o)})
	if err != nil {
		return remedy.Provision(err, p.Manifest.Profile)
	}
	if err := a.sweepServers(ctx, a.Out); err != nil {
		a.warnf("`abox gateway up` removes them later", "removing the MCP server containers finished runs left: %v", err)
	}
	switch {
	case res.LoginRemoved:
		fmt.Fprintf(a.Out, "removed the Claude login volume %s\n", res.Login)
	case !o.keepAuth && !a.TTY:
		fmt.Fprintf(a.Out, "kept the Claude login volume %s (remove it with `abox nuke --include-auth`)\n", res.Login)
	default:
		fmt.Fprintf(a.Out, "kept the Claude login volume %s\n", res.Login)
	}
	return nil
}

// removeLogin decides whether nuke removes the Claude login volume: --include-auth and
// --keep-auth say, else the person at the terminal is asked; without one it is kept.
func (a *App) removeLogin(o nukeOptions) func(volume string) bool {
	return func(vol string) bool {
		switch {
		case o.includeAuth:
			return true
		case o.keepAuth || !a.TTY:
			return false
		}
		return a.confirm(fmt.Sprintf("also remove the Claude login volume %s? the next run will need `abox shell` to log in again", vol))
	}
}
