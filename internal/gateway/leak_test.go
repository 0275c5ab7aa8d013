package gateway

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/policy"
)

func TestLeaks(t *testing.T) {
	f := newFixture(t)
	// web's remote docs is un-narrowed and has no known tools, so web's netd passes any name;
	// the gateway also serves api's time. api's servers all have known tools.
	want := []Leak{{Project: "web", Workspace: "/src/web", Unlisted: []string{"docs"}, Foreign: []string{"time"}, Owners: []string{"api"}}}
	if diff := cmp.Diff(want, f.reg.Leaks(f.custom, f.cat)); diff != "" {
		t.Errorf("Leaks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, f.plan(t).Leaks); diff != "" {
		t.Errorf("Plan.Leaks (-want +got):\n%s", diff)
	}
}

func TestLeaksNone(t *testing.T) {
	tests := []struct {
		name string
		edit func(f *fixture)
	}{
		{"the unlisted server narrowed", func(f *fixture) {
			web := f.reg.Projects["aaaaaaaaaaaa"]
			web.Tools["docs"] = []string{"search_docs"}
			f.reg.Projects["aaaaaaaaaaaa"] = web
		}},
		{"alone on the profile", func(f *fixture) { delete(f.reg.Projects, "bbbbbbbbbbbb") }},
		{"every served server its own", func(f *fixture) {
			web := f.reg.Projects["aaaaaaaaaaaa"]
			web.Servers = append(web.Servers, "time")
			f.reg.Projects["aaaaaaaaaaaa"] = web
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.edit(f)
			if got := f.reg.Leaks(f.custom, f.cat); len(got) != 0 {
				t.Errorf("Leaks = %+v, want none", got)
			}
		})
	}
}

func TestLeaksCustomServerWithoutTools(t *testing.T) {
	f := newFixture(t)
	// notes with "*" (or no list) has no known tools: web now leaks through notes too, and api,
	// which declares notes un-narrowed, leaks web's github narrowing and fetch.
	f.custom["notes"] = config.CustomServer{Image: localImage('a'), Tools: []string{"*"}}
	api := f.reg.Projects["bbbbbbbbbbbb"]
	api.Servers = append(api.Servers, "notes")
	f.reg.Projects["bbbbbbbbbbbb"] = api
	got := f.reg.Leaks(f.custom, f.cat)
	want := []Leak{
		{Project: "web", Workspace: "/src/web", Unlisted: []string{"docs", "notes"}, Foreign: []string{"time"}, Owners: []string{"api"}},
		{Project: "api", Workspace: "/src/api", Unlisted: []string{"notes"}, Foreign: []string{"docs"}, Owners: []string{"web"}},
	}
	if diff := cmp.Diff(want, got, sortLeaks); diff != "" {
		t.Errorf("Leaks (-want +got):\n%s", diff)
	}
}

var sortLeaks = cmp.Transformer("sortLeaks", func(in []Leak) map[string]Leak {
	out := map[string]Leak{}
	for _, l := range in {
		out[l.Project] = l
	}
	return out
})

func TestForeignServers(t *testing.T) {
	got := ForeignServers([]string{"a", "c"}, []string{"d", "a", "b", "c", "b"})
	if want := []string{"b", "d"}; !cmp.Equal(got, want) {
		t.Errorf("ForeignServers = %v, want %v", got, want)
	}
	if got := ForeignServers([]string{"a"}, []string{"a"}); got != nil {
		t.Errorf("ForeignServers of its own = %v, want none", got)
	}
}

func TestUnlistedServers(t *testing.T) {
	m := &policy.MCP{Servers: []string{"docs", "fetch", "notes"}, Tools: map[string]string{"fetch": "fetch", "note_add": "notes"}, Unlisted: true}
	if got := UnlistedServers(m); !cmp.Equal(got, []string{"docs"}) {
		t.Errorf("UnlistedServers = %v, want docs", got)
	}
}

// TestLeaksBorrowedTool: api narrows time to now and get_issue; get_issue is a tool of github,
// which api declares too, so nothing leaks. Once api drops github, its netd would still let
// get_issue through, to web's github.
func TestLeaksBorrowedTool(t *testing.T) {
	f := newFixture(t)
	api := f.reg.Projects["bbbbbbbbbbbb"]
	api.Tools["time"] = []string{"now", "get_issue"}
	f.reg.Projects["bbbbbbbbbbbb"] = api
	for _, l := range f.reg.Leaks(f.custom, f.cat) {
		if l.Project == "api" {
			t.Errorf("api leaks %+v while it declares github itself", l)
		}
	}
	api.Servers = []string{"fetch", "time"}
	f.reg.Projects["bbbbbbbbbbbb"] = api
	var got *Leak
	for _, l := range f.reg.Leaks(f.custom, f.cat) {
		if l.Project == "api" {
			got = &l
		}
	}
	want := &Leak{Project: "api", Workspace: "/src/api", Foreign: []string{"docs", "github", "notes"},
		Owners: []string{"web"}, Borrowed: map[string]string{"get_issue": "github"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("api's leak (-want +got):\n%s", diff)
	}
}

// TestBorrowedToolsUnderPrefix: a catalog entry with a prefix is served as <prefix>__<tool>, so
// a project's own "search" is not the prefixed server's.
func TestBorrowedToolsUnderPrefix(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "catalogs", "docker-mcp.yaml"), "version: 3\nname: docker-mcp\nregistry:\n"+
		"  ddg:\n    image: mcp/ddg"+pin+"\n    tools: [{name: search}]\n"+
		"  wiki:\n    image: mcp/wiki"+pin+"\n    prefix: wiki\n    tools: [{name: search}]\n")
	cat, err := catalog.Load(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := &Union{Servers: []string{"ddg", "wiki"}, Tools: []string{"ddg:*", "wiki:*"}}
	if got := u.BorrowedTools([]string{"search"}, []string{"wiki"}, nil, cat); got != nil {
		t.Errorf("BorrowedTools = %v, want none: wiki serves wiki__search", got)
	}
	if got := u.BorrowedTools([]string{"wiki__search"}, []string{"wiki"}, nil, cat); got["wiki__search"] != "wiki" {
		t.Errorf("BorrowedTools = %v, want wiki__search from wiki", got)
	}
}

// TestServedToolsFromNarrowing: a server whose tools nobody documents still serves the names a
// project's narrowing of it gives the gateway.
func TestServedToolsFromNarrowing(t *testing.T) {
	f := newFixture(t)
	f.custom["notes"] = config.CustomServer{Image: localImage('a')}
	web := f.reg.Projects["aaaaaaaaaaaa"]
	web.Tools["notes"] = []string{"note_add"}
	f.reg.Projects["aaaaaaaaaaaa"] = web
	u := f.reg.Union()
	if got := u.ServedTools("notes", f.custom, nil); !cmp.Equal(got, []string{"note_add"}) {
		t.Errorf("ServedTools(notes) = %v, want web's narrowing", got)
	}
	if got := u.ServedTools("github", f.custom, f.cat); !cmp.Equal(got, []string{"create_issue", "get_issue", "search_code"}) {
		t.Errorf("ServedTools(github) = %v, want the catalog's tools", got)
	}
}
