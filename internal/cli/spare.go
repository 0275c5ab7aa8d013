package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/sandbox"
)

// newSpareNetdCmd is the hidden command `abox run` starts in the background after every run
// ([sandbox.SpawnAfterRun]): it removes the netds the project's runs retired and the MCP server
// containers whose run is over (those the gateway left: [gateway.SweepServers]), then, when
// config.yaml sets defaults.spare_netd, starts the project's next netd ahead, after the same
// preflight as a run ([launch.Spare]). The removal comes first and needs nothing of the project
// but its state directory, so a manifest that no longer loads does not leave a netd behind.
func newSpareNetdCmd(a *App) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "spare-netd",
		Short:  "Remove the project's finished netds and start its next one (started by abox run)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			retireErr := errors.Join(a.removeRetired(c.Context(), dir), a.sweepServers(c.Context(), a.Err))
			p, err := a.loadProject(dir)
			if err != nil {
				return errors.Join(retireErr, err)
			}
			return errors.Join(retireErr, remedy.Refusal(launch.Spare(c.Context(), a.launchEnv(p)), p.State.Runs()))
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

// removeRetired removes the finished netds on the retire list of the project in dir.
func (a *App) removeRetired(ctx context.Context, dir string) error {
	ws, err := manifest.Find(dir)
	if err != nil {
		return remedy.Load(err)
	}
	ps, err := a.Paths()
	if err != nil {
		return err
	}
	return sandbox.RemoveRetired(ctx, a.docker(), ps.Project(ws))
}
