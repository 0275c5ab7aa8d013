package doctor

import (
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
)

// unlistedProject declares fetch, whose catalog entry lists its tools, and notool, whose entry
// lists none: its netd policy is Unlisted. It is bound to the default profile.
func unlistedProject(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, baseManifest)
	f.writeMCP("catalogs/docker-mcp.yaml", "registry:\n  fetch:\n    image: mcp/fetch@"+pinnedDigest+"\n    tools: [{name: fetch}]\n"+
		"  notool:\n    image: mcp/notool@"+pinnedDigest+"\n  time:\n    image: mcp/time@"+pinnedDigest+"\n    tools: [{name: now}]\n")
	f.manifest = baseManifest + "servers: [fetch, notool]\n"
	f.writeWS("agentbox.yaml", f.manifest)
	f.render()
	f.approve()
	f.bind(f.project.Hash, f.parsed())
	return f
}

// bind records m in the default profile's registry as project hash.
func (f *fixture) bind(hash string, m *manifest.Manifest) {
	f.t.Helper()
	if _, err := gateway.Bind(f.paths.GatewaysDir(), "default", hash, gateway.NewBinding("/src/"+m.Project, m, nil)); err != nil {
		f.t.Fatal(err)
	}
}

func TestGatewayProjectScope(t *testing.T) {
	f := withServers(t).daemonUp().noGateway()
	wantStatus(t, "narrowed", f.run(gatewayProjectScope), OK)

	f = unlistedProject(t).daemonUp().noGateway()
	got := f.run(gatewayProjectScope)
	wantStatus(t, "unlisted, alone", got, OK)
	if !strings.Contains(got.Detail, "notool has no known tool list") {
		t.Errorf("detail = %q, want the unlisted server named", got.Detail)
	}

	f.bind("bbbbbbbbbbbb", &manifest.Manifest{Project: "other", Profile: "default", Servers: []string{"time"}})
	got = f.run(gatewayProjectScope)
	wantStatus(t, "unlisted, beside another project", got, Fail)
	if !strings.Contains(got.Detail, "also serves time") || !strings.Contains(got.Hint, "abox mcp add notool --tool NAME") {
		t.Errorf("finding = %+v, want time named and the narrowing hint", got)
	}
	if by := got.Data["declared_by"]; !slices.Equal(by.([]string), []string{"other"}) {
		t.Errorf("declared_by = %v, want other", by)
	}
}

// TestGatewayProjectScopeLiveGateway: the registry holds only the project, but the running
// gateway still serves another project's server.
func TestGatewayProjectScopeLiveGateway(t *testing.T) {
	f := unlistedProject(t).daemonUp().gatewayContainer(func(c map[string]any) {
		c["Args"] = []string{"--transport=streaming", "--servers=fetch,notool,time"}
	})
	got := f.run(gatewayProjectScope)
	wantStatus(t, "live gateway", got, Fail)
	if !strings.Contains(got.Detail, "also serves time") {
		t.Errorf("detail = %q, want time named", got.Detail)
	}
}

// TestGatewayProjectScopeBorrowedTool: a narrowing of fetch that names time's tool lets it
// through netd to the other project's time server.
func TestGatewayProjectScopeBorrowedTool(t *testing.T) {
	f := unlistedProject(t)
	f.manifest = baseManifest + "servers: [fetch]\ntools:\n  fetch: [fetch, now]\n"
	f.writeWS("agentbox.yaml", f.manifest)
	f.render()
	f.approve()
	f.bind(f.project.Hash, f.parsed())
	f.daemonUp().noGateway()
	wantStatus(t, "alone", f.run(gatewayProjectScope), OK)
	f.bind("bbbbbbbbbbbb", &manifest.Manifest{Project: "other", Profile: "default", Servers: []string{"time"}})
	got := f.run(gatewayProjectScope)
	wantStatus(t, "borrowed", got, Fail)
	if !strings.Contains(got.Detail, "tools: lets through now, a tool of time") || !strings.Contains(got.Hint, "take the other project's tools out") {
		t.Errorf("finding = %+v, want now named as time's", got)
	}
}
