package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/manifest"
)

// mcpRow is one server of `mcp list`; its JSON form is stable.
type mcpRow struct {
	Server  string   `json:"server"`
	Kind    string   `json:"kind"` // server, poci, remote; unknown when no catalog has it
	Image   string   `json:"image,omitempty"`
	URL     string   `json:"url,omitempty"`
	Pinned  bool     `json:"pinned"`
	Local   bool     `json:"local,omitempty"` // a custom server's pin: false image: never pulled
	Secrets []string `json:"secrets"`
	Source  string   `json:"source"`          // the catalog file, custom, or manifest-remote
	Tools   []string `json:"tools,omitempty"` // the project's narrowing
	Network string   `json:"network,omitempty"`
}

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
	var rows []mcpRow
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
		for _, name := range cat.Names() {
			e, _ := cat.Lookup(name)
			rows = append(rows, entryRow(e))
		}
	} else {
		p, err := a.loadProject(o.dir)
		if err != nil {
			return err
		}
		cat, err := catalog.Load(a.mcpHome(), p.custom)
		if err != nil {
			return err
		}
		rows = projectRows(p.manifest, cat)
	}
	if o.json {
		if rows == nil {
			rows = []mcpRow{}
		}
		return a.writeJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.Out, "no MCP servers; declare one with `abox mcp add SERVER`")
		return nil
	}
	table(a.Out, textRows(rows, !o.all))
	return nil
}

// projectRows lists the manifest's servers, then its remote servers.
func projectRows(m *manifest.Manifest, cat *catalog.Catalog) []mcpRow {
	var rows []mcpRow
	for _, s := range m.Servers {
		r := mcpRow{Server: s, Kind: "unknown", Source: "not in any catalog", Secrets: []string{}}
		if e, ok := cat.Lookup(s); ok {
			r = entryRow(e)
		}
		r.Tools, r.Network = m.Tools[s], m.ServerNetwork[s]
		rows = append(rows, r)
	}
	for _, name := range slices.Sorted(maps.Keys(m.RemoteServers)) {
		rs := m.RemoteServers[name]
		r := mcpRow{Server: name, Kind: "remote", URL: rs.URL, Pinned: true, Source: "manifest-remote", Secrets: []string{}, Tools: m.Tools[name]}
		for _, sec := range rs.Secrets {
			r.Secrets = append(r.Secrets, sec.Name)
		}
		rows = append(rows, r)
	}
	return rows
}

func entryRow(e catalog.Entry) mcpRow {
	r := mcpRow{Server: e.Name, Kind: e.Type, Image: e.Image, URL: e.RemoteURL, Pinned: e.Pinned(), Source: e.Source, Secrets: []string{},
		Local: e.Source == "custom" && !e.Pin}
	for _, s := range e.Secrets {
		r.Secrets = append(r.Secrets, s.Name)
	}
	return r
}

// textRows renders the table; withTools adds the project's narrowing.
func textRows(rows []mcpRow, withTools bool) [][]string {
	out := [][]string{{"SERVER", "IMAGE / ENDPOINT", "SECRETS", "SOURCE"}}
	if withTools {
		out[0] = append(out[0], "TOOLS")
	}
	for _, r := range rows {
		where := r.URL
		if r.Image != "" {
			where = elide(r.Image)
			switch {
			case r.Local:
				where += " (local, never pulled)"
			case !r.Pinned:
				where += " (unpinned)"
			}
		}
		if where == "" {
			where = "-"
		}
		if r.Network == "none" {
			where += " (no network)"
		}
		tools := "all"
		if len(r.Tools) > 0 {
			tools = strings.Join(r.Tools, ", ")
		}
		row := []string{r.Server, where, orDash(strings.Join(r.Secrets, ", ")), r.Source}
		if withTools {
			row = append(row, tools)
		}
		out = append(out, row)
	}
	return out
}

// elide shortens a long image reference to its repository's start and its digest's end.
func elide(s string) string {
	if len(s) < 54 {
		return s
	}
	return s[:26] + "…" + s[len(s)-24:]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
