package edit_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/manifest"
)

const withRemote = base + "remote_servers:\n  docs:\n    url: https://mcp.example.com/mcp\n"

// TestAddServer: a catalog server is declared with its narrowing, a tool the catalog does not
// list is warned of, and declaring it again without narrowing edits nothing.
func TestAddServer(t *testing.T) {
	p, home := fixture(t, base)
	fake := dockertest.New(t)
	noSandbox(fake, p)
	var r recorder
	env := r.env(fake, home)
	d, err := edit.AddServer(context.Background(), p, env, "github-official", []string{"list_issues", "web_fetch"})
	if err != nil || d.Already || d.Remote || len(d.Entry.Secrets) != 1 {
		t.Fatalf("AddServer = %+v, %v", d, err)
	}
	if len(r.warns) != 1 || r.warns[0] != `github-official's catalog entry does not list a tool "web_fetch" (it lists list_issues)` {
		t.Errorf("warnings = %q", r.warns)
	}
	ws := readFile(t, filepath.Join(p.Workspace, manifest.FileName))
	if !strings.Contains(ws, "  - github-official") || !strings.Contains(ws, "web_fetch") {
		t.Errorf("workspace manifest = %q", ws)
	}
	d, err = edit.AddServer(context.Background(), p, env, "github-official", nil)
	if err != nil || !d.Already || len(r.renders) != 1 {
		t.Errorf("AddServer again = %+v, %v, %d renders; want already declared, nothing rendered", d, err, len(r.renders))
	}
}

// TestAddServerRefuses: an unknown or badly named server, and a remote one without narrowing,
// are refused before anything is written.
func TestAddServerRefuses(t *testing.T) {
	for _, c := range []struct {
		server string
		check  func(error) bool
	}{
		{"nope", func(err error) bool { var e *catalog.UnknownServerError; return errors.As(err, &e) }},
		{"no/pe", func(err error) bool { var e *catalog.BadNameError; return errors.As(err, &e) }},
		{"docs", func(err error) bool {
			var e *edit.AlreadyRemoteError
			return errors.As(err, &e) && err.Error() == `"docs" is already declared as a remote server`
		}},
	} {
		p, home := fixture(t, withRemote)
		var r recorder
		if _, err := edit.AddServer(context.Background(), p, r.env(dockertest.New(t), home), c.server, nil); !c.check(err) {
			t.Errorf("AddServer(%q) = %v", c.server, err)
		}
		if len(r.renders) != 0 {
			t.Errorf("AddServer(%q) rendered", c.server)
		}
	}
}

// TestAddServerNarrowsRemote: narrowing a remote server sets its tools.
func TestAddServerNarrowsRemote(t *testing.T) {
	p, home := fixture(t, withRemote)
	fake := dockertest.New(t)
	noSandbox(fake, p)
	var r recorder
	d, err := edit.AddServer(context.Background(), p, r.env(fake, home), "docs", []string{"search"})
	if err != nil || !d.Remote {
		t.Fatalf("AddServer = %+v, %v", d, err)
	}
	if got := p.Manifest.Tools["docs"]; len(got) != 1 || got[0] != "search" {
		t.Errorf("tools of docs = %q", got)
	}
}

// TestRemoveServers: rm refuses a remote server and an undeclared one; rm-remote one that is not
// remote; each removes what it should.
func TestRemoveServers(t *testing.T) {
	p, home := fixture(t, withRemote+"servers:\n  - duckduckgo\n")
	fake := dockertest.New(t)
	noSandbox(fake, p)
	var r recorder
	env := r.env(fake, home)
	ctx := context.Background()
	var remote *edit.RemoteError
	if err := edit.RemoveServer(ctx, p, env, "docs"); !errors.As(err, &remote) || err.Error() != `"docs" is a remote server` {
		t.Errorf("RemoveServer(docs) = %v, want a RemoteError", err)
	}
	var nd *edit.NotDeclaredError
	if err := edit.RemoveServer(ctx, p, env, "github-official"); !errors.As(err, &nd) || err.Error() != `"github-official" is not declared in agentbox.yaml` {
		t.Errorf("RemoveServer(github-official) = %v, want a NotDeclaredError", err)
	}
	if err := edit.RemoveRemote(ctx, p, env, "duckduckgo"); !errors.As(err, &nd) || err.Error() != `"duckduckgo" is not a remote server of this project` {
		t.Errorf("RemoveRemote(duckduckgo) = %v, want a NotDeclaredError", err)
	}
	if len(r.renders) != 0 {
		t.Fatalf("a refused removal rendered")
	}
	if err := edit.RemoveServer(ctx, p, env, "duckduckgo"); err != nil {
		t.Fatal(err)
	}
	if err := edit.RemoveRemote(ctx, p, env, "docs"); err != nil {
		t.Fatal(err)
	}
	if ws := readFile(t, filepath.Join(p.Workspace, manifest.FileName)); strings.Contains(ws, "duckduckgo") || strings.Contains(ws, "remote_servers") {
		t.Errorf("workspace manifest = %q, want both servers gone", ws)
	}
}

// TestSetRemote declares a remote server.
func TestSetRemote(t *testing.T) {
	p, home := fixture(t, base)
	fake := dockertest.New(t)
	noSandbox(fake, p)
	var r recorder
	rs := manifest.RemoteServer{URL: "https://mcp.example.com/mcp", Transport: manifest.DefaultTransport}
	if err := edit.SetRemote(context.Background(), p, r.env(fake, home), "docs", rs); err != nil {
		t.Fatal(err)
	}
	if got := p.Manifest.RemoteServers["docs"].URL; got != rs.URL {
		t.Errorf("remote server docs has URL %q, want %q", got, rs.URL)
	}
}

// TestImport: the host's servers are classified for the project, and the importable ones
// declared.
func TestImport(t *testing.T) {
	p, home := fixture(t, base)
	claude := filepath.Join(t.TempDir(), ".claude.json")
	writeFile(t, claude, `{"mcpServers": {"docs": {"type": "http", "url": "https://mcp.example.com/mcp"}, "local": {"command": "npx"}}}`)
	writeFile(t, filepath.Join(home, "registry.yaml"), "registry:\n  duckduckgo: {}\n")
	rows, err := edit.HostImports(p, home, claude)
	if err != nil {
		t.Fatal(err)
	}
	todo := catalog.Importable(rows)
	if len(rows) != 3 || len(todo) != 2 {
		t.Fatalf("HostImports = %+v, importable %+v; want 3 rows, 2 importable", rows, todo)
	}
	fake := dockertest.New(t)
	noSandbox(fake, p)
	var r recorder
	if err := edit.Import(context.Background(), p, r.env(fake, home), todo); err != nil {
		t.Fatal(err)
	}
	if !p.Manifest.IsDeclared("duckduckgo") || !p.Manifest.IsDeclared("docs") {
		t.Errorf("declared %v and %v, want both imported", p.Manifest.Servers, p.Manifest.RemoteServers)
	}

	writeFile(t, claude, "{")
	var ce *catalog.HostConfigError
	if _, err := edit.HostImports(p, home, claude); !errors.As(err, &ce) {
		t.Errorf("HostImports of a broken config = %v, want a HostConfigError", err)
	}
}

// TestServerEditsRefuseAnUnapprovedManifest: a server only the agent declared (the workspace
// manifest differs from its approval) is neither "already declared" to mcp add nor removable:
// each decision that reads the manifest refuses it as unapproved first, and writes nothing.
func TestServerEditsRefuseAnUnapprovedManifest(t *testing.T) {
	approvedRaw := base
	planted := base + "servers:\n  - github-official\nremote_servers:\n  planted:\n    url: https://mcp.example.com/mcp\n"
	p, home := fixture(t, planted)
	writeFile(t, p.State.Approved(), approvedRaw)
	fake := dockertest.New(t)
	var r recorder
	env := r.env(fake, home)
	var unapproved *edit.UnapprovedError
	if d, err := edit.AddServer(context.Background(), p, env, "github-official", nil); !errors.As(err, &unapproved) {
		t.Errorf("AddServer of a server only the agent declared = %+v, %v; want *UnapprovedError", d, err)
	}
	if err := edit.RemoveServer(context.Background(), p, env, "github-official"); !errors.As(err, &unapproved) {
		t.Errorf("RemoveServer = %v, want *UnapprovedError", err)
	}
	if err := edit.RemoveRemote(context.Background(), p, env, "planted"); !errors.As(err, &unapproved) {
		t.Errorf("RemoveRemote = %v, want *UnapprovedError", err)
	}
	if ws := readFile(t, filepath.Join(p.Workspace, "agentbox.yaml")); ws != planted || len(r.renders) != 0 {
		t.Errorf("workspace manifest = %q after %d renders, want it untouched", ws, len(r.renders))
	}
}
