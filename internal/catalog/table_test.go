package catalog

import (
	"fmt"
	"testing"
)

func TestTable(t *testing.T) {
	rows := []Server{
		{Server: "fetch", Image: "mcp/fetch", Source: "docker-mcp", Secrets: []string{"fetch.key", "fetch.other"}},
		{Server: "gh", URL: "https://gh.example/mcp", Source: "remote", Tools: []string{"a", "b"}},
	}
	got := fmt.Sprint(Table(rows, true))
	want := fmt.Sprint([][]string{
		{"SERVER", "IMAGE / ENDPOINT", "SECRETS", "SOURCE", "TOOLS"},
		{"fetch", rows[0].Endpoint(), "fetch.key, fetch.other", "docker-mcp", "all"},
		{"gh", rows[1].Endpoint(), "-", "remote", "a, b"},
	})
	if got != want {
		t.Errorf("Table = %s\nwant %s", got, want)
	}
	if h := Table(nil, false); len(h) != 1 || len(h[0]) != 4 {
		t.Errorf("Table without tools = %v, want a 4-column header only", h)
	}
}

func TestImportTable(t *testing.T) {
	got := fmt.Sprint(ImportTable([]HostServer{
		{Name: "fetch", Where: "docker", Import: ImportServer},
		{Name: "web", Where: "claude", Import: ImportRemote},
		{Name: "MCP_DOCKER", Where: "claude", Import: ImportNo, Reason: "it is the gateway"},
		{Name: "have", Where: "docker", Import: ImportHave, Reason: "declared"},
	}))
	want := fmt.Sprint([][]string{
		{"SERVER", "ON THE HOST", "IMPORT"},
		{"fetch", "docker", "yes, as a " + ImportServer},
		{"web", "claude", "yes, as a " + ImportRemote},
		{"MCP_DOCKER", "claude", ImportNo + ": it is the gateway"},
		{"have", "docker", ImportHave + ": declared"},
	})
	if got != want {
		t.Errorf("ImportTable = %s\nwant %s", got, want)
	}
}
