package gateway

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestRenderCatalog: the union of two projects, with a shadow (fetch: server_network none in
// one project), a custom server, a remote server with a secret header, and catalog servers
// verbatim.
func TestRenderCatalog(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t)
	golden(t, "catalog.yaml", p.Catalog)
	var doc struct {
		Registry map[string]map[string]any `yaml:"registry"`
	}
	if err := yaml.Unmarshal(p.Catalog, &doc); err != nil {
		t.Fatal(err)
	}
	fetch := doc.Registry["fetch"]
	if fetch["disableNetwork"] != true || fetch["allowHosts"] != nil {
		t.Errorf("fetch shadow = %v, want disableNetwork and no allowHosts", fetch)
	}
	if gh := doc.Registry["github"]; gh["allowHosts"] == nil || gh["disableNetwork"] != nil {
		t.Errorf("github = %v, want the upstream entry verbatim", gh)
	}
	if strings.Contains(string(p.Catalog), testToken) {
		t.Error("the catalog holds the token")
	}
}

func TestRenderCatalogDeterministic(t *testing.T) {
	f := newFixture(t)
	a, b := f.plan(t).Catalog, f.plan(t).Catalog
	if string(a) != string(b) {
		t.Error("two renderings differ")
	}
}
