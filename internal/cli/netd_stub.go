package cli

import "github.com/spf13/cobra"

func newNetdCmd(a *App) *cobra.Command {
	c := stub("netd", "Run netd, the sandbox's network daemon (inside the netd container only)", "netd", cobra.ArbitraryArgs)
	c.Hidden = true
	return c
}
