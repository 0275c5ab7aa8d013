package catalog

import "strings"

// Table is `abox mcp list`'s table of rows, a header row first; withTools adds the project's
// narrowing ("all" for a server it does not narrow). Cells are raw: the printer escapes them.
func Table(rows []Server, withTools bool) [][]string {
	out := [][]string{{"SERVER", "IMAGE / ENDPOINT", "SECRETS", "SOURCE"}}
	if withTools {
		out[0] = append(out[0], "TOOLS")
	}
	for _, r := range rows {
		secrets := strings.Join(r.Secrets, ", ")
		if secrets == "" {
			secrets = "-"
		}
		row := []string{r.Server, r.Endpoint(), secrets, r.Source}
		if withTools {
			tools := "all"
			if len(r.Tools) > 0 {
				tools = strings.Join(r.Tools, ", ")
			}
			row = append(row, tools)
		}
		out = append(out, row)
	}
	return out
}

// ImportTable is `abox mcp import`'s table of rows ([Catalog.ClassifyImports]), a header row
// first. Cells are raw, and names may come from the workspace's .mcp.json: the printer escapes
// them.
func ImportTable(rows []HostServer) [][]string {
	out := [][]string{{"SERVER", "ON THE HOST", "IMPORT"}}
	for _, r := range rows {
		answer := r.Import
		switch r.Import {
		case ImportServer, ImportRemote:
			answer = "yes, as a " + r.Import
		case ImportNo, ImportHave:
			answer = r.Import + ": " + r.Reason
		}
		out = append(out, []string{r.Name, r.Where, answer})
	}
	return out
}
