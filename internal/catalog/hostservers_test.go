package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// TestHostServers reads the Toolkit's enabled servers and Claude Code's, global and this
// workspace's; missing files are empty, and a file that does not parse says which it is.
func TestHostServers(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "registry.yaml"), []byte("registry:\n  zeta: {}\n  alpha: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cc := filepath.Join(t.TempDir(), ".claude.json")
	if err := os.WriteFile(cc, []byte(`{"mcpServers":{"docs":{"type":"sse","url":"https://docs.example.com/sse","headers":{"Authorization":"x"}}},
"projects":{"/ws":{"mcpServers":{"fs":{"command":"npx","args":["server-filesystem"]}}},"/other":{"mcpServers":{"no":{"url":"https://no.example.com"}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := HostServers(home, cc, "/ws")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range got {
		names = append(names, h.Name+"@"+h.Where+"="+h.Import)
	}
	want := []string{"alpha@Docker MCP Toolkit=", "zeta@Docker MCP Toolkit=", "docs@~/.claude.json=" + ImportRemote, "fs@~/.claude.json (this project)=" + ImportNo}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("HostServers (-want +got):\n%s", diff)
	}
	if !got[2].Headers || got[2].Transport != "sse" || got[2].URL != "https://docs.example.com/sse" {
		t.Errorf("docs = %+v, want an sse remote whose headers are noted", got[2])
	}
	if none, err := HostServers(t.TempDir(), filepath.Join(t.TempDir(), "missing.json"), "/ws"); err != nil || len(none) != 0 {
		t.Errorf("HostServers without files = %v, %v; want nothing", none, err)
	}
	os.WriteFile(cc, []byte("{not json"), 0o600)
	var ce *HostConfigError
	if _, err := HostServers(home, cc, "/ws"); !errors.As(err, &ce) || ce.ClaudeConfig != cc || !strings.Contains(err.Error(), "reading "+cc) {
		t.Errorf("HostServers with a broken Claude config = %v, want a HostConfigError naming it", err)
	}
	os.WriteFile(filepath.Join(home, "registry.yaml"), []byte("registry: [\n"), 0o600)
	if _, err := HostServers(home, cc, "/ws"); !errors.As(err, &ce) || ce.ClaudeConfig != "" || !strings.Contains(err.Error(), "Docker MCP Toolkit registry") {
		t.Errorf("HostServers with a broken registry.yaml = %v, want a HostConfigError for it", err)
	}
}
