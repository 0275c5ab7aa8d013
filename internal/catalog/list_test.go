package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/manifest"
)

func TestProjectServers(t *testing.T) {
	c := &Catalog{entries: map[string]Entry{
		"github": {Name: "github", Type: "server", Image: "ghcr.io/github/mcp@sha256:" + sixtyFour, Source: "docker-mcp.yaml", Pin: true,
			Secrets: []Secret{{Name: "github.token", Env: "GITHUB_TOKEN"}}},
		"local": {Name: "local", Type: "server", Image: "mine:dev", Source: "custom"},
	}}
	m := &manifest.Manifest{
		Servers:       []string{"github", "gone", "local"},
		Tools:         map[string][]string{"github": {"get_issue"}, "docs": {"search"}},
		ServerNetwork: map[string]string{"local": "none"},
		RemoteServers: map[string]manifest.RemoteServer{
			"wiki": {URL: "https://wiki.example.com/mcp"},
			"docs": {URL: "https://docs.example.com/mcp", Secrets: []manifest.SecretEnv{{Name: "docs.token", Env: "DOCS"}}},
		},
	}
	want := []Server{
		{Server: "github", Kind: "server", Image: "ghcr.io/github/mcp@sha256:" + sixtyFour, Pinned: true, Secrets: []string{"github.token"},
			Source: "docker-mcp.yaml", Tools: []string{"get_issue"}},
		{Server: "gone", Kind: "unknown", Source: "not in any catalog", Secrets: []string{}},
		// A custom pin: false image is never pulled, so it counts as pinned, and is marked local.
		{Server: "local", Kind: "server", Image: "mine:dev", Pinned: true, Local: true, Secrets: []string{}, Source: "custom", Network: "none"},
		{Server: "docs", Kind: "remote", URL: "https://docs.example.com/mcp", Pinned: true, Secrets: []string{"docs.token"},
			Source: "manifest-remote", Tools: []string{"search"}},
		{Server: "wiki", Kind: "remote", URL: "https://wiki.example.com/mcp", Pinned: true, Secrets: []string{}, Source: "manifest-remote"},
	}
	if diff := cmp.Diff(want, c.ProjectServers(m)); diff != "" {
		t.Errorf("ProjectServers() mismatch (-want +got):\n%s", diff)
	}
	all := c.Servers()
	if len(all) != 2 || all[0].Server != "github" || all[1].Server != "local" {
		t.Errorf("Servers() = %+v, want github then local", all)
	}
}

const sixtyFour = "3333333333333333333333333333333333333333333333333333333333333333"

func TestUnknown(t *testing.T) {
	c := &Catalog{entries: map[string]Entry{"github": {Name: "github"}}}
	if got, want := c.Unknown([]string{"zz", "github", "aa"}), []string{"zz", "aa"}; !cmp.Equal(got, want) {
		t.Errorf("Unknown() = %v, want %v", got, want)
	}
	if got := c.Unknown([]string{"github"}); got != nil {
		t.Errorf("Unknown(github) = %v, want none", got)
	}
}

func TestEndpoint(t *testing.T) {
	long := "ghcr.io/github/github-mcp-server@sha256:" + sixtyFour
	tests := []struct {
		s    Server
		want string
	}{
		{Server{Image: long, Pinned: true}, "ghcr.io/github/github-mcp-…" + sixtyFour[40:]},
		{Server{Image: "mine:dev", Pinned: true, Local: true}, "mine:dev (local, never pulled)"},
		{Server{Image: "mcp/fetch:latest"}, "mcp/fetch:latest (unpinned)"},
		{Server{URL: "https://docs.example.com/mcp", Pinned: true}, "https://docs.example.com/mcp"},
		{Server{Kind: "unknown"}, "-"},
		{Server{Image: "mine:dev", Pinned: true, Local: true, Network: "none"}, "mine:dev (local, never pulled) (no network)"},
		{Server{Network: "none"}, "- (no network)"},
	}
	for _, tc := range tests {
		if got := tc.s.Endpoint(); got != tc.want {
			t.Errorf("%+v.Endpoint() = %q, want %q", tc.s, got, tc.want)
		}
	}
}
