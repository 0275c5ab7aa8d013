package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/manifest"
)

func TestUnion(t *testing.T) {
	f := newFixture(t)
	u := f.reg.Union()
	want := &Union{
		Profile:     "dev",
		Projects:    []string{"api", "web"},
		Servers:     []string{"fetch", "github", "notes", "time"},
		Remote:      f.reg.Projects["aaaaaaaaaaaa"].RemoteServers,
		NetworkNone: []string{"fetch"},
		// github: narrowed by web, not by api → every tool; notes, docs: nobody narrows;
		// time: api is the only declarer and narrows it.
		Tools: []string{"docs:*", "fetch:*", "github:*", "notes:*", "time:now"},
	}
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("Union (-want +got):\n%s", diff)
	}
	if got := u.All(); !cmp.Equal(got, []string{"docs", "fetch", "github", "notes", "time"}) {
		t.Errorf("All = %v", got)
	}
}

func TestUnionNarrowedByEveryProject(t *testing.T) {
	f := newFixture(t)
	api := f.reg.Projects["bbbbbbbbbbbb"]
	api.Tools["github"] = []string{"search_code", "get_issue"}
	f.reg.Projects["bbbbbbbbbbbb"] = api
	u := f.reg.Union()
	want := []string{"docs:*", "fetch:*", "github:get_issue", "github:search_code", "notes:*", "time:now"}
	if diff := cmp.Diff(want, u.Tools); diff != "" {
		t.Errorf("Tools (-want +got):\n%s", diff)
	}
	for _, tool := range u.Tools {
		if !containsColon(tool) {
			t.Errorf("--tools element %q is a bare name", tool)
		}
	}
}

func containsColon(s string) bool {
	for _, c := range s {
		if c == ':' {
			return true
		}
	}
	return false
}

func TestUnionConflicts(t *testing.T) {
	f := newFixture(t)
	api := f.reg.Projects["bbbbbbbbbbbb"]
	api.RemoteServers = map[string]Remote{"docs": {URL: "https://other.example.com/mcp", Transport: "sse"}}
	f.reg.Projects["bbbbbbbbbbbb"] = api
	other := f.reg.Projects["aaaaaaaaaaaa"]
	other.Servers = append(other.Servers, "time")
	f.reg.Projects["aaaaaaaaaaaa"] = other
	third := NewBinding("/src/x", &manifest.Manifest{Project: "x", RemoteServers: map[string]manifest.RemoteServer{"time": {URL: "https://t.example.com/"}}}, nil)
	f.reg.Projects["cccccccccccc"] = third
	u := f.reg.Union()
	want := []string{
		`projects web and api define remote server "docs" differently`,
		`"time" is a remote server of project x and a catalog or custom server of another project`,
	}
	if diff := cmp.Diff(want, u.Conflicts); diff != "" {
		t.Errorf("Conflicts (-want +got):\n%s", diff)
	}
}

func TestBindUnbind(t *testing.T) {
	f := newFixture(t)
	st, err := os.Stat(filepath.Join(f.dir, RegistryFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("registry mode = %v, want 0600", st.Mode().Perm())
	}
	// Moving web to another profile unbinds it from dev.
	m := &manifest.Manifest{Project: "web", Profile: "prod", Servers: []string{"time"}}
	left, err := Bind(f.gwDir, "prod", "aaaaaaaaaaaa", NewBinding("/src/web", m, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(left, []string{"dev"}) {
		t.Errorf("Bind left %v, want [dev]", left)
	}
	dev, _ := LoadRegistry(f.dir, "dev")
	if !cmp.Equal(dev.Hashes(), []string{"bbbbbbbbbbbb"}) {
		t.Errorf("dev projects = %v", dev.Hashes())
	}
	from, err := Unbind(f.gwDir, "aaaaaaaaaaaa")
	if err != nil || !cmp.Equal(from, []string{"prod"}) {
		t.Errorf("Unbind = %v, %v, want [prod]", from, err)
	}
	prod, _ := LoadRegistry(filepath.Join(f.gwDir, "prod"), "prod")
	if len(prod.Projects) != 0 || !prod.Union().Empty() {
		t.Errorf("prod after unbind = %+v", prod)
	}
}

func TestRegistryRoundTrip(t *testing.T) {
	f := newFixture(t)
	data, err := os.ReadFile(filepath.Join(f.dir, RegistryFile))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "registry.json", data)
}
