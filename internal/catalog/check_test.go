package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
)

const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

const testCatalog = `version: 3
name: docker-mcp
registry:
  fetch:
    image: mcp/fetch` + digest + `
    tools: [{name: fetch}]
  fetch2:
    image: docker.io/mcp/fetch2` + digest + `
    tools: [{name: fetch}, {name: head}]
  prefixed:
    image: mcp/prefixed` + digest + `
    prefix: p
    tools: [{name: fetch}]
  tagged-mcp:
    image: mcp/duckduckgo:latest
  tagged-other:
    image: ghcr.io/example/srv:v1
  hosted:
    type: remote
    remote: {url: "https://mcp.example.com/mcp", transport_type: streamable-http}
`

func loadTest(t *testing.T, custom config.CustomServers) *Catalog {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "catalogs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "catalogs", "docker-mcp.yaml"), []byte(testCatalog), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(home, custom)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheck(t *testing.T) {
	no := false
	c := loadTest(t, config.CustomServers{
		"local": {Image: "sha256:" + strings.Repeat("a", 64), Pin: &no, Tools: []string{"head"}},
	})
	tests := []struct {
		name    string
		servers []string
		remote  []string
		want    []Kind
	}{
		{"clean", []string{"fetch", "hosted"}, nil, nil},
		{"unknown", []string{"fetch", "nope"}, nil, []Kind{Unknown}},
		{"remote names are not looked up", []string{"fetch", "mine"}, []string{"mine"}, nil},
		{"duplicate tool", []string{"fetch", "fetch2"}, nil, []Kind{ToolCollision}},
		{"prefix avoids a collision", []string{"fetch", "prefixed"}, nil, nil},
		{"custom tools collide too", []string{"fetch2", "local"}, nil, []Kind{ToolCollision, LocalImage}},
		{"mcp tag is an error", []string{"tagged-mcp"}, nil, []Kind{UnpinnedSigned}},
		{"other tag is a warning", []string{"tagged-other"}, nil, []Kind{Unpinned}},
		{"errors first", []string{"tagged-other", "zzz"}, nil, []Kind{Unknown, Unpinned}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Kind
			for _, f := range c.Check(tc.servers, tc.remote) {
				got = append(got, f.Kind)
				if f.Error != (f.Kind == Unknown || f.Kind == ToolCollision || f.Kind == UnpinnedSigned) {
					t.Errorf("finding %+v: wrong severity", f)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check(%v) kinds (-want +got):\n%s", tc.servers, diff)
			}
		})
	}
}

func TestCheckCollisionMessage(t *testing.T) {
	c := loadTest(t, nil)
	fs := c.Check([]string{"fetch", "fetch2"}, nil)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, `tool "fetch" is provided by fetch and fetch2`) {
		t.Errorf("Check = %+v, want one collision naming both servers", fs)
	}
}

func TestCheckMissingCatalogDir(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "nowhere"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := c.Check(nil, nil)
	if len(fs) != 1 || fs[0].Kind != NoCatalog || fs[0].Error {
		t.Errorf("Check with no catalog directory = %+v, want one warning", fs)
	}
}

func TestImages(t *testing.T) {
	no := false
	local := "sha256:" + strings.Repeat("b", 64)
	c := loadTest(t, config.CustomServers{"local": {Image: local, Pin: &no}})
	got := c.Images([]string{"fetch", "hosted", "local", "nope", "fetch"})
	want := []Image{
		{Server: "fetch", Ref: "mcp/fetch" + digest, Pull: true},
		{Server: "local", Ref: local, Pull: false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Images (-want +got):\n%s", diff)
	}
}

func TestToolNames(t *testing.T) {
	c := loadTest(t, nil)
	e, _ := c.Lookup("prefixed")
	if got := e.ToolNames(); !cmp.Equal(got, []string{"p__fetch"}) {
		t.Errorf("ToolNames = %v, want [p__fetch]", got)
	}
}
