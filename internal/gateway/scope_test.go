package gateway

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
)

// scopeCatalog documents fetch's tool (fetch) and time's (now); notes lists none.
const scopeCatalog = "version: 3\nname: docker-mcp\nregistry:\n" +
	"  fetch:\n    image: mcp/fetch" + pin + "\n    tools: [{name: fetch}]\n" +
	"  time:\n    image: mcp/time" + pin + "\n    tools: [{name: now}]\n" +
	"  notes:\n    image: mcp/notes" + pin + "\n"

// scopeRegistry binds the given manifests to profile dev and returns its registry.
func scopeRegistry(t *testing.T, ms ...*manifest.Manifest) *Registry {
	t.Helper()
	gw := filepath.Join(t.TempDir(), "gateways")
	for i, m := range ms {
		m.Profile = "dev"
		hash := string(rune('a'+i)) + "00000000000"
		if _, err := Bind(gw, "dev", hash, NewBinding("/src/"+m.Project, m, nil)); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := LoadRegistry(filepath.Join(gw, "dev"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestProjectScope: the decision a run's preflight and doctor's gateway.project-scope share.
// Every expected value is written out from the rule, not computed: an agent whose netd lets
// every name through (Unlisted) or lets through a name a foreign server serves (Borrowed) can
// reach another project's tools as soon as the gateway serves a server the project does not
// declare (Foreign), by the registry or by the running container's --servers.
func TestProjectScope(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "catalogs", "docker-mcp.yaml"), scopeCatalog)
	cat, err := catalog.Load(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	gamma := func() *manifest.Manifest { return &manifest.Manifest{Project: "gamma", Servers: []string{"notes"}} }
	alpha := func() *manifest.Manifest { return &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}} }
	gammaUnlisted := &policy.Netd{Project: "gamma", MCP: &policy.MCP{Servers: []string{"notes"}, Tools: map[string]string{}, Unlisted: true}}
	gammaNarrowed := &policy.Netd{Project: "gamma", MCP: &policy.MCP{Servers: []string{"notes"}, Tools: map[string]string{"note_add": "notes"}}}
	narrowedGamma := gamma()
	narrowedGamma.Tools = map[string][]string{"notes": {"note_add"}}
	running := &docker.Container{Args: []string{"--transport=streaming", "--servers=notes,time"}}

	tests := []struct {
		name    string
		netd    *policy.Netd
		reg     []*manifest.Manifest
		running *docker.Container
		want    Leak
		ok      bool
	}{
		{"no MCP reaches no gateway", &policy.Netd{Project: "gamma"}, []*manifest.Manifest{gamma(), alpha()}, nil,
			Leak{Project: "gamma"}, true},
		{"unlisted, alone on the profile", gammaUnlisted, []*manifest.Manifest{gamma()}, nil,
			Leak{Project: "gamma", Unlisted: []string{"notes"}}, true},
		{"unlisted, beside another project", gammaUnlisted, []*manifest.Manifest{gamma(), alpha()}, nil,
			Leak{Project: "gamma", Unlisted: []string{"notes"}, Foreign: []string{"fetch"}, Owners: []string{"alpha"}}, false},
		{"narrowed, beside another project", gammaNarrowed, []*manifest.Manifest{narrowedGamma, alpha()}, nil,
			Leak{Project: "gamma", Foreign: []string{"fetch"}, Owners: []string{"alpha"}}, true},
		{"unlisted, the running gateway still serves time", gammaUnlisted, []*manifest.Manifest{gamma()}, running,
			Leak{Project: "gamma", Unlisted: []string{"notes"}, Foreign: []string{"time"}}, false},
		{"a narrowing borrows another project's narrowed tool", &policy.Netd{Project: "alpha", MCP: &policy.MCP{Servers: []string{"fetch"},
			Tools: map[string]string{"fetch": "fetch", "note_add": "fetch"}}}, []*manifest.Manifest{narrowedGamma, alpha()}, nil,
			Leak{Project: "alpha", Foreign: []string{"notes"}, Owners: []string{"gamma"}, Borrowed: map[string]string{"note_add": "notes"}}, false},
		{"a narrowing borrows a documented tool of the running gateway", &policy.Netd{Project: "alpha", MCP: &policy.MCP{Servers: []string{"fetch"},
			Tools: map[string]string{"fetch": "fetch", "now": "fetch"}}}, []*manifest.Manifest{alpha()},
			&docker.Container{Args: []string{"--servers=fetch,time"}},
			Leak{Project: "alpha", Foreign: []string{"time"}, Borrowed: map[string]string{"now": "time"}}, false},
		{"a narrowing of its own tools only", &policy.Netd{Project: "alpha", MCP: &policy.MCP{Servers: []string{"fetch"},
			Tools: map[string]string{"fetch": "fetch"}}}, []*manifest.Manifest{narrowedGamma, alpha()}, nil,
			Leak{Project: "alpha", Foreign: []string{"notes"}, Owners: []string{"gamma"}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := ProjectScope(ScopeInput{Netd: tc.netd, Registry: scopeRegistry(t, tc.reg...), Running: tc.running,
				Catalog: func() (*catalog.Catalog, error) { return cat, nil }})
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("leak (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProjectScopeCatalog: the catalogs are read only when the gateway serves a foreign
// server, and an error reading them is no verdict.
func TestProjectScopeCatalog(t *testing.T) {
	np := &policy.Netd{Project: "gamma", MCP: &policy.MCP{Servers: []string{"notes"}, Unlisted: true}}
	broken := errors.New("catalog docker-mcp.yaml: broken")
	calls := 0
	load := func() (*catalog.Catalog, error) { calls++; return nil, broken }
	_, ok, err := ProjectScope(ScopeInput{Netd: np, Registry: scopeRegistry(t, &manifest.Manifest{Project: "gamma", Servers: []string{"notes"}}), Catalog: load})
	if err != nil || !ok || calls != 0 {
		t.Errorf("alone: ok %v, err %v, %d catalog loads; want true, nil, 0", ok, err, calls)
	}
	reg := scopeRegistry(t, &manifest.Manifest{Project: "gamma", Servers: []string{"notes"}}, &manifest.Manifest{Project: "alpha", Servers: []string{"fetch"}})
	_, ok, err = ProjectScope(ScopeInput{Netd: np, Registry: reg, Catalog: load})
	if !errors.Is(err, broken) || ok {
		t.Errorf("beside alpha with a broken catalog: ok %v, err %v; want false and the catalog's error", ok, err)
	}
}

// TestLeakLines: the refusal names the project, its open servers, what else the gateway
// serves and whose it is, and each borrowed tool with its server.
func TestLeakLines(t *testing.T) {
	l := Leak{Project: "gamma", Unlisted: []string{"notes"}, Foreign: []string{"fetch", "time"}, Owners: []string{"alpha"},
		Borrowed: map[string]string{"now": "time", "fetch": "fetch"}}
	want := []string{
		"project gamma declares notes, whose tools nobody lists, so its netd lets any tool name through; the gateway also serves fetch, time of alpha",
		"project gamma's tools: lets through fetch (a tool of fetch), now (a tool of time), a server it does not declare",
	}
	if diff := cmp.Diff(want, l.Lines()); diff != "" {
		t.Errorf("Lines (-want +got):\n%s", diff)
	}
}
