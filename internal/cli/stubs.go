package cli

import (
	"github.com/spf13/cobra"
)

// stub builds a command whose capability has not landed in this build. It is registered with
// its real flags so that --help documents it.
func stub(use, short, name string, args cobra.PositionalArgs) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE:  func(*cobra.Command, []string) error { return notYet(name) },
	}
}

func withDir(c *cobra.Command) *cobra.Command {
	var dir string
	addDirFlag(c, &dir)
	return c
}
