package cli

import "github.com/spf13/cobra"

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
