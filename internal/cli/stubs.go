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

func newDoctorCmd(a *App) *cobra.Command {
	return withDir(stub("doctor", "Audit the live machine against the project's artifacts", "doctor", cobra.NoArgs))
}

func newMCPCmd(a *App) *cobra.Command {
	return groupCmd("mcp", "Manage the MCP servers the agent reaches through the gateway",
		withDir(stub("list", "List declared (or, with --all, known) MCP servers", "mcp list", cobra.NoArgs)),
		withDir(stub("add SERVER", "Declare a catalog or custom server", "mcp add", cobra.ExactArgs(1))),
		withDir(stub("rm SERVER", "Undeclare a server", "mcp rm", cobra.ExactArgs(1))),
		withDir(stub("add-remote NAME", "Declare an internet-hosted MCP server, proxied by the gateway", "mcp add-remote", cobra.ExactArgs(1))),
		withDir(stub("rm-remote NAME", "Undeclare a remote server", "mcp rm-remote", cobra.ExactArgs(1))),
		withDir(stub("import", "Inventory this host's MCP servers and what can come in", "mcp import", cobra.NoArgs)),
		withDir(stub("cost", "Per-turn token cost of the tool schemas the agent sees", "mcp cost", cobra.NoArgs)),
		stub("oauth [PROVIDER]", "List or authorize OAuth apps for hosted servers (Docker Desktop)", "mcp oauth", cobra.MaximumNArgs(1)),
	)
}

func newSecretsCmd(a *App) *cobra.Command {
	return groupCmd("secrets", "Manage secrets: sources, the store, and what uses them",
		withDir(stub("sync", "Push every readable source into the store", "secrets sync", cobra.NoArgs)),
		withDir(stub("check", "Report drift between sources and the store (never prints values)", "secrets check", cobra.NoArgs)),
		withDir(stub("set NAME", "Store one secret from a prompt, a file, an env var or stdin", "secrets set", cobra.ExactArgs(1))),
		withDir(stub("ls", "List secrets and who uses them", "secrets ls", cobra.NoArgs)),
		withDir(stub("attach ENV=NAME...", "Hand a stored secret to the agent as an environment variable", "secrets attach", cobra.MinimumNArgs(1))),
		withDir(stub("detach ENV...", "Take an attached secret back", "secrets detach", cobra.MinimumNArgs(1))),
		withDir(stub("rm NAME...", "Remove secrets from the store (refused while referenced)", "secrets rm", cobra.MinimumNArgs(1))),
	)
}

func newGatewayCmd(a *App) *cobra.Command {
	return groupCmd("gateway", "Manage the per-profile MCP gateway",
		withDir(stub("up [PROFILE]", "Start or reconcile a profile's gateway", "gateway up", cobra.MaximumNArgs(1))),
		withDir(stub("down [PROFILE]", "Stop and remove a profile's gateway", "gateway down", cobra.MaximumNArgs(1))),
		withDir(stub("status [PROFILE]", "Show gateways, their servers and tools", "gateway status", cobra.MaximumNArgs(1))),
		withDir(stub("update", "Re-resolve the gateway image tag to a digest and pin it", "gateway update", cobra.NoArgs)),
	)
}

func newNetdCmd(a *App) *cobra.Command {
	c := stub("netd", "Run netd, the sandbox's network daemon (inside the netd container only)", "netd", cobra.ArbitraryArgs)
	c.Hidden = true
	return c
}
