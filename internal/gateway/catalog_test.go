package gateway

import (
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/manifest"
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

// TestPlanRefusesUnshadowable: server_network: none on a catalog's remote entry cannot be
// applied (there is no container to cut off), so the plan refuses it.
func TestPlanRefusesUnshadowable(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(filepath.Dir(f.gwDir), "mcp", "catalogs", "hosted.yaml"),
		"registry:\n  hosted:\n    type: remote\n    remote: {url: \"https://h.example.com/mcp\"}\n")
	cat, err := catalog.Load(filepath.Join(filepath.Dir(f.gwDir), "mcp"), f.custom)
	if err != nil {
		t.Fatal(err)
	}
	f.cat = cat
	rebind(t, f, "bbbbbbbbbbbb", &manifest.Manifest{Project: "api", Servers: []string{"hosted"}, ServerNetwork: map[string]string{"hosted": "none"}})
	errs := f.plan(t).Errors()
	if len(errs) != 1 || !strings.Contains(errs[0], `server_network: none cannot be applied to "hosted"`) {
		t.Errorf("Errors = %v", errs)
	}
}
