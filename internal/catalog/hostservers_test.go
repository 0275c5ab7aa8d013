package catalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/manifest"
)

// TestClassifyImports: the three answers, and why.
func TestClassifyImports(t *testing.T) {
	home := t.TempDir()
	cat := "registry:\n  github-official:\n    image: ghcr.io/github/github-mcp-server@sha256:" +
		"2222222222222222222222222222222222222222222222222222222222222222\n"
	if err := os.MkdirAll(filepath.Join(home, "catalogs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "catalogs", "c.yaml"), []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(home, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := []HostServer{{Name: "github-official", Where: "Docker MCP Toolkit"}, {Name: "gone", Where: "Docker MCP Toolkit"}}
	found = append(found, claudeServers(map[string]ClaudeServer{
		"MCP_DOCKER":  {Command: "docker", Args: []string{"mcp", "gateway", "run"}},
		"gw":          {Command: "/usr/local/bin/docker", Args: []string{"mcp", "gateway", "run"}},
		"linear":      {Type: "sse", URL: "https://mcp.linear.app/sse"},
		"plain":       {Type: "http", URL: "http://localhost:3000/mcp"},
		"fs":          {Command: "npx", Args: []string{"server-filesystem"}},
		"bad name!":   {URL: "https://x.example.com/"},
		"have-remote": {URL: "https://h.example.com/"},
	}, "~/.claude.json")...)
	m := &manifest.Manifest{RemoteServers: map[string]manifest.RemoteServer{"have-remote": {URL: "https://h.example.com/"}}}
	got := map[string]string{}
	for _, h := range c.ClassifyImports(found, m) {
		got[h.Name] = h.Import
		if h.Import == ImportNo && h.Reason == "" {
			t.Errorf("%s: no without a reason", h.Name)
		}
	}
	want := map[string]string{
		"github-official": ImportServer, "gone": ImportNo, "MCP_DOCKER": ImportNo, "gw": ImportNo,
		"linear": ImportRemote, "plain": ImportNo, "fs": ImportNo, "bad name!": ImportNo, "have-remote": ImportHave,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ClassifyImports (-want +got):\n%s", diff)
	}
}

func TestApplyImports(t *testing.T) {
	d, err := manifest.ParseDoc([]byte("version: 1\nproject: p\nprofile: default\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	rows := []HostServer{
		{Name: "github-official", Import: ImportServer},
		{Name: "linear", Import: ImportRemote, URL: "https://mcp.linear.app/sse", Transport: "sse"},
	}
	if err := ApplyImports(d, rows); err != nil {
		t.Fatal(err)
	}
	m, err := d.Manifest("t")
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(m.Servers, []string{"github-official"}) || m.RemoteServers["linear"].Transport != "sse" {
		t.Errorf("applied manifest = %+v", m)
	}
}
