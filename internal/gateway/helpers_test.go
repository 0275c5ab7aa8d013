package gateway

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	testToken = "tok-Zm9vYmFyYmF6cXV1eC1hYm94LWdhdGV3YXktdGVzdA"
	pin       = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	gwImage   = "docker/mcp-gateway" + pin
)

// testCatalogYAML is a Docker MCP catalog with a networked server, a server with allowHosts
// (shadowed with server_network: none) and a tool-less server.
const testCatalogYAML = `version: 3
name: docker-mcp
registry:
  github:
    type: server
    title: GitHub
    image: ghcr.io/github/github-mcp-server` + pin + `
    secrets: [{name: github.personal_access_token, env: GITHUB_PERSONAL_ACCESS_TOKEN}]
    allowHosts: ["api.github.com:443"]
    tools: [{name: get_issue}, {name: create_issue}, {name: search_code}]
  fetch:
    type: server
    image: mcp/fetch` + pin + `
    allowHosts: ["*:443"]
    tools: [{name: fetch}]
  time:
    type: server
    image: mcp/time` + pin + `
    tools: [{name: now}]
`

func localImage(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// fixture is a profile with two bound projects:
//
//	web: github narrowed to get_issue, fetch with server_network: none, custom "notes",
//	     remote "docs" with a bearer header from a secret
//	api: github un-narrowed, fetch shared, time narrowed to now
type fixture struct {
	dir    string // the profile's state directory
	gwDir  string // gateways/
	cfg    *config.Config
	cat    *catalog.Catalog
	custom config.CustomServers
	reg    *Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	mcpHome := filepath.Join(root, "mcp")
	write(t, filepath.Join(mcpHome, "catalogs", "docker-mcp.yaml"), testCatalogYAML)
	no := false
	custom := config.CustomServers{
		"notes": {Image: localImage('a'), Pin: &no, Network: "none", Tools: []string{"note_add", "note_list"},
			Secrets: []config.CustomSecret{{Name: "notes.key", Env: "NOTES_KEY"}}, Env: map[string]string{"NOTES_DIR": "/data"},
			Command: []string{"--stdio"}, Volumes: []string{"abox-notes:/data"}, Description: "team notes"},
	}
	cat, err := catalog.Load(mcpHome, custom)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Gateway.Image = gwImage
	cfg.Profiles["dev"] = config.Profile{Port: 8812}
	f := &fixture{gwDir: filepath.Join(root, "gateways"), cfg: cfg, cat: cat, custom: custom}
	f.dir = filepath.Join(f.gwDir, "dev")
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	web := &manifest.Manifest{Project: "web", Profile: "dev",
		Servers:       []string{"github", "fetch", "notes"},
		Tools:         map[string][]string{"github": {"get_issue"}},
		ServerNetwork: map[string]string{"fetch": "none"},
		RemoteServers: map[string]manifest.RemoteServer{"docs": {URL: "https://docs.example.com/mcp",
			Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"},
			Secrets: []manifest.SecretEnv{{Name: "docs.token", Env: "DOCS_TOKEN"}}}},
	}
	api := &manifest.Manifest{Project: "api", Profile: "dev",
		Servers: []string{"github", "fetch", "time"},
		Tools:   map[string][]string{"time": {"now"}},
	}
	for _, p := range []struct {
		hash string
		m    *manifest.Manifest
	}{{"aaaaaaaaaaaa", web}, {"bbbbbbbbbbbb", api}} {
		if _, err := Bind(f.gwDir, "dev", p.hash, NewBinding("/src/"+p.m.Project, p.m, custom)); err != nil {
			t.Fatal(err)
		}
	}
	f.reg, err = LoadRegistry(f.dir, "dev")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) plan(t *testing.T) *Plan {
	t.Helper()
	p, err := NewPlan(PlanInput{Profile: "dev", Dir: f.dir, Config: f.cfg, Registry: f.reg, Catalog: f.cat, Custom: f.custom, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, diff)
	}
}
