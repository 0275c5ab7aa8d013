package cli

import "github.com/spf13/cobra"

func newGatewayCmd(a *App) *cobra.Command {
	return groupCmd("gateway", "Manage the per-profile MCP gateway",
		withDir(stub("up [PROFILE]", "Start or reconcile a profile's gateway", "gateway up", cobra.MaximumNArgs(1))),
		withDir(stub("down [PROFILE]", "Stop and remove a profile's gateway", "gateway down", cobra.MaximumNArgs(1))),
		withDir(stub("status [PROFILE]", "Show gateways, their servers and tools", "gateway status", cobra.MaximumNArgs(1))),
		withDir(stub("update", "Re-resolve the gateway image tag to a digest and pin it", "gateway update", cobra.NoArgs)),
	)
}
