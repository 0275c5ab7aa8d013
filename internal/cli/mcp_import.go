package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/remedy"
)

func newMCPImportCmd(a *App) *cobra.Command {
	var dir string
	var apply bool
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Inventory this host's MCP servers and what can come in",
		Long: `Import lists the MCP servers this host already uses — the Docker MCP Toolkit's enabled
servers (registry.yaml under ABOX_DOCKER_MCP_HOME, default ~/.docker/mcp) and Claude Code's
mcpServers (ABOX_CLAUDE_CONFIG, default ~/.claude.json) — and says for each whether it can run
in the sandbox: a catalog server comes in as a server, an https URL as a remote server; the
Docker MCP gateway itself (MCP_DOCKER) and local stdio commands do not, and the reason is shown.
--apply declares the importable ones. Headers are never imported: they may hold credentials.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runMCPImport(c.Context(), a, dir, apply) },
	}
	addDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&apply, "apply", false, "declare the importable servers in agentbox.yaml")
	return cmd
}

func runMCPImport(ctx context.Context, a *App, dir string, apply bool) error {
	p, err := a.loadProject(dir)
	if err != nil {
		return err
	}
	rows, err := edit.HostImports(p, a.mcpHome(), a.claudeConfig())
	if err != nil {
		return remedy.HostConfig(err)
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.Out, "no MCP servers configured on this host")
		return nil
	}
	table(a.Out, catalog.ImportTable(rows)) // the printer escapes each cell
	todo := catalog.Importable(rows)
	switch {
	case len(todo) == 0:
		return nil
	case !apply:
		fmt.Fprintln(a.Out, "next: `abox mcp import --apply` declares the importable ones")
		return nil
	}
	if err := edit.Import(ctx, p, a.editEnv(), todo); err != nil {
		return remedy.Edit(err)
	}
	for _, r := range todo {
		linef(a.Out, "declared %s (%s)", r.Name, r.Import) // names and URLs may come from the workspace's .mcp.json
		if r.Headers {
			linef(a.Out, "  its headers were not imported: add them from a secret with `abox mcp add-remote %s --url %s --header 'Name: ${VAR}' --secret NAME=VAR`", r.Name, r.URL)
		}
	}
	fmt.Fprintln(a.Out, "next: `abox up` starts them in the gateway")
	return nil
}

// claudeConfig is Claude Code's configuration file: ABOX_CLAUDE_CONFIG, or ~/.claude.json.
func (a *App) claudeConfig() string {
	if path := a.getenv("ABOX_CLAUDE_CONFIG"); path != "" {
		return path
	}
	return filepath.Join(a.getenv("HOME"), ".claude.json")
}
