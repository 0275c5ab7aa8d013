package cli

import "github.com/spf13/cobra"

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
