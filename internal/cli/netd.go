package cli

import (
	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/netd"
)

// newNetdCmd is the hidden entry point of the netd container: the netd image runs this same
// binary as `abox netd`. Its arguments go to netd unparsed.
func newNetdCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:                "netd",
		Short:              "Run netd, the sandbox's network daemon (inside the netd container only)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if code := netd.Main(c.Context(), args, a.Out, a.Err); code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
}
