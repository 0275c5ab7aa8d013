package cli

import (
	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/remedy"
)

// newSpareNetdCmd is the hidden command `abox run` starts in the background after a run when
// config.yaml sets defaults.spare_netd: it starts the project's next netd ahead, after the same
// preflight as a run ([launch.Spare]).
func newSpareNetdCmd(a *App) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "spare-netd",
		Short:  "Start the project's netd for its next run (started by abox run)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := a.loadProject(dir)
			if err != nil {
				return err
			}
			return remedy.Refusal(launch.Spare(c.Context(), a.launchEnv(p)), p.State.Runs())
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}
