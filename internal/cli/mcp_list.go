package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/catalog"
)

type mcpListOptions struct {
	dir       string
	all, json bool
}

func newMCPListCmd(a *App) *cobra.Command {
	var opts mcpListOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List declared (or, with --all, known) MCP servers",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return runMCPList(a, opts) },
	}
	addDirFlag(cmd, &opts.dir)
	cmd.Flags().BoolVar(&opts.all, "all", false, "list every server of the catalogs and custom-servers.yaml")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func runMCPList(a *App, o mcpListOptions) error {
	var rows []catalog.Server
	if o.all {
		_, custom, _, err := a.loadConfig()
		if err != nil {
			return err
		}
		cat, err := catalog.Load(a.mcpHome(), custom)
		if err != nil {
			return err
		}
		for _, w := range cat.Warnings {
			a.warnf("", "%s", w)
		}
		rows = cat.Servers()
	} else {
		p, err := a.loadProject(o.dir)
		if err != nil {
			return err
		}
		cat, err := catalog.Load(a.mcpHome(), p.Custom)
		if err != nil {
			return err
		}
		rows = cat.ProjectServers(p.Manifest)
	}
	if o.json {
		if rows == nil {
			rows = []catalog.Server{}
		}
		return a.writeJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.Out, "no MCP servers; declare one with `abox mcp add SERVER`")
		return nil
	}
	table(a.Out, catalog.Table(rows, !o.all))
	return nil
}
