package cli

import (
	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/sandbox"
)

// newSpareNetdCmd is the hidden command `abox run` starts in the background after a run when
// config.yaml sets defaults.spare_netd: it starts the project's next netd ahead
// ([sandbox.Sandbox.StartSpare]) after the same preflight as a run.
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
			if !p.Config.Defaults.SpareNetd { // turned off since the run that started this
				return nil
			}
			pre, err := a.preflight(c.Context(), p)
			if err != nil {
				return err
			}
			sb := &sandbox.Sandbox{Docker: a.docker(), Project: p.State, Spec: pre.RunSpec, Baseline: pre.Baseline, Now: a.Now}
			return sb.StartSpare(c.Context(), sandbox.Options{Gateway: pre.Gateway})
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

// startSpare starts `abox spare-netd` for the project in the background
// ([sandbox.SpawnSpare]) when config.yaml asks for spare netds.
func (a *App) startSpare(p *project.Project) {
	if !p.Config.Defaults.SpareNetd || a.Executable == "" {
		return
	}
	if err := sandbox.SpawnSpare(a.Executable, p.State); err != nil {
		a.warnf("", "starting the spare netd: %v", err)
	}
}
