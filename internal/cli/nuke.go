package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
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
volumes of its toolchain caches (mounts.caches). It unbinds the project from its
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
	removed, err := a.nukeLocked(ctx, p)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "removed %s, the artifacts and the review copy of %s\n", plural(removed, "container", "containers"), p.Manifest.Project)
	// Once the containers are gone, nothing writes a clone any more. (isolate takes the
	// project lock itself.)
	clones, err := (&isolate.Repo{Project: p.State}).Sweep()
	if err != nil {
		return withHint(err, "remove the clone by hand, or run `abox nuke` again")
	}
	if len(clones) > 0 {
		fmt.Fprintf(a.Out, "removed %s of isolated runs (branches already in your repository stay; `abox merge <run>` still lands one)\n",
			plural(len(clones), "clone", "clones"))
	}
	return a.nukeAuth(ctx, p, o)
}

// nukeLocked removes the project's containers, gateway binding and state under its lock.
func (a *App) nukeLocked(ctx context.Context, p *project.Project) (int, error) {
	unlock, err := p.Lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := a.requireDaemon(ctx); err != nil {
		return 0, err
	}
	// No spare netd starts while nuke lists and removes: one being started is waited for, so
	// that its container is among those removed.
	release, err := sandbox.HoldSpares(p.State, sandbox.SpareHoldWait)
	if err != nil {
		return 0, withHint(err, "run `abox nuke` again once it started")
	}
	defer release()
	removed, err := sandbox.RemoveContainers(ctx, a.docker(), p.State.Hash)
	if err != nil {
		return 0, err
	}
	if err := a.unbindProject(ctx, p); err != nil {
		return 0, err
	}
	if err := sandbox.RemoveCaches(ctx, a.docker(), p.State.Hash, p.Manifest.Mounts.Caches); err != nil {
		return removed, withHint(err, "stop what uses the volume, then run `abox nuke` again")
	}
	return removed, sandbox.RemoveState(p.State)
}

// nukeAuth removes the Claude login volume only when the user says so.
func (a *App) nukeAuth(ctx context.Context, p *project.Project, o nukeOptions) error {
	vol := render.ClaudeVolume(p.State.Hash)
	remove := o.includeAuth
	if !o.keepAuth && !o.includeAuth {
		if !a.TTY {
			fmt.Fprintf(a.Out, "kept the Claude login volume %s (remove it with `abox nuke --include-auth`)\n", vol)
			return nil
		}
		remove = a.confirm(fmt.Sprintf("also remove the Claude login volume %s? the next run will need `abox shell` to log in again", vol))
	}
	if !remove {
		fmt.Fprintf(a.Out, "kept the Claude login volume %s\n", vol)
		return nil
	}
	if err := a.docker().VolumeRemove(ctx, vol); err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "removed the Claude login volume %s\n", vol)
	return nil
}
