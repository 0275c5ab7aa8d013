package render_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// specFor builds a Spec with the fixed test paths from a manifest and optional custom servers.
func specFor(t *testing.T, manifestYAML string, custom config.CustomServers) render.Spec {
	t.Helper()
	m, err := manifest.Parse([]byte(manifestYAML), manifest.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if custom == nil {
		custom = config.CustomServers{}
	}
	return render.Spec{
		Version: testVersion, Manifest: m, Config: config.Default(), Paths: testPaths,
		Project: testPaths.Project(testWorkspace), Home: testHome, Custom: custom,
	}
}

func netdPolicyOf(t *testing.T, arts []render.Artifact) *policy.Netd {
	t.Helper()
	p, err := policy.Parse(artifactData(t, arts, render.NetdDir+"/"+policy.File))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A custom server whose tools: holds "*" exposes every tool, even when names are listed beside
// it; "*" is never a tool name of its own in netd's map.
func TestCustomToolsWildcard(t *testing.T) {
	tests := []struct {
		tools        []string
		wantTools    map[string]string
		wantUnlisted bool
	}{
		{nil, map[string]string{}, true},
		{[]string{"*"}, map[string]string{}, true},
		{[]string{"search", "*"}, map[string]string{}, true},
		{[]string{"search", "read"}, map[string]string{"search": "notes", "read": "notes"}, false},
	}
	for _, tc := range tests {
		custom := config.CustomServers{"notes": {Image: "notes:dev", Tools: tc.tools}}
		s := specFor(t, "project: p\nprofile: default\nservers: [notes]\n", custom)
		mcp := netdPolicyOf(t, mustRender(t, s)).MCP
		if diff := cmp.Diff(tc.wantTools, mcp.Tools); diff != "" || mcp.Unlisted != tc.wantUnlisted {
			t.Errorf("tools %q: netd tools (-want +got):\n%s\nunlisted = %v, want %v", tc.tools, diff, mcp.Unlisted, tc.wantUnlisted)
		}
	}
}

// A server whose tools nobody lists makes the policy Unlisted; when its catalog entry sets a
// prefix, netd.json carries it, so netd can attribute the gateway's <prefix>__<tool> names.
func TestUnlistedPrefixes(t *testing.T) {
	s := specFor(t, "project: p\nprofile: default\nservers: [pre, bare, listed]\n", nil)
	s.Catalog = fakeCatalog{
		"pre":    {"image": "pre:1", "prefix": "pp"},
		"bare":   {"image": "bare:1"},
		"listed": {"image": "listed:1", "prefix": "ll", "tools": []any{map[string]any{"name": "t"}}},
	}
	mcp := netdPolicyOf(t, mustRender(t, s)).MCP
	if !mcp.Unlisted {
		t.Fatal("policy not Unlisted")
	}
	if diff := cmp.Diff(map[string]string{"pre": "pp"}, mcp.Prefixes); diff != "" {
		t.Errorf("prefixes (-want +got):\n%s", diff)
	}
	for tool, want := range map[string]string{"pp__x": "pre", "x": "bare", "ll__t": "listed"} {
		if got, _ := mcp.Allows(tool); got != want {
			t.Errorf("Allows(%q) = %q, want %q", tool, got, want)
		}
	}
}

// Render refuses a sandbox that would hand the agent abox's own state or configuration (the
// gateway tokens, the authoritative artifacts and the approved manifest live there, and the
// agent's uid 1000 is often the host user's own uid, so file modes do not protect them) or a
// Docker socket.
func TestRefusesStateInReach(t *testing.T) {
	tests := []struct {
		name, workspace, context, home string
	}{
		{"workspace is home", "/home/u", "", testHome},
		{"workspace holds the state", "/home/u/.local", "", testHome},
		{"workspace inside the state", "/home/u/.local/state/abox/projects/x", "", testHome},
		{"workspace holds the config", "/home/u/.config", "", testHome},
		{"context is home", testWorkspace, "~", testHome},
		{"context is home with slash", testWorkspace, "~/", testHome},
		{"context is root", testWorkspace, "/", testHome},
		{"context holds the config", testWorkspace, "~/.config", testHome},
		{"context inside the state", testWorkspace, "~/.local/state/abox/gateways", testHome},
		{"context with dots", testWorkspace, "/srv/../home/u/.local/./state", testHome},
		{"docker socket", testWorkspace, "/var/run/docker.sock", testHome},
		{"run", testWorkspace, "/run", testHome},
		{"var run", testWorkspace, "/var/run/", testHome},
		{"var, where /var/run may be a directory", testWorkspace, "/var", testHome},
		{"rootless docker", testWorkspace, "/run/user/1000", testHome},
		{"desktop socket", testWorkspace, "~/.docker/run", testHome},
		{"docker config", testWorkspace, "~/.docker", testHome},
		{"a socket", testWorkspace, "/srv/x/podman.sock", testHome},
		{"home unknown", testWorkspace, "~/notes", ""},
		{"home relative", testWorkspace, "~/notes", "u"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mf := "project: p\nprofile: default\n"
			if tc.context != "" {
				mf += "mounts: {context: [\"" + tc.context + "\"]}\n"
			}
			s := specFor(t, mf, nil)
			s.Project = testPaths.Project(tc.workspace)
			s.Home = tc.home
			if arts, err := render.Render(s); err == nil {
				t.Errorf("Render = %d artifacts, want an error", len(arts))
			}
		})
	}
	// Near misses are fine.
	for _, ctx := range []string{"~/notes", "~/.local/statex", "/home/u2", "~/.config-old", "/srv", "/runner", "/var/runs", "/var/lib/x", "~/.dockerfiles", "/srv/x.sock.d"} {
		s := specFor(t, "project: p\nprofile: default\nmounts: {context: [\""+ctx+"\"]}\n", nil)
		if _, err := render.Render(s); err != nil {
			t.Errorf("context %s: Render error = %v", ctx, err)
		}
	}
}

// The same host directory listed twice in mounts.context is mounted once.
func TestContextMountsDeduplicated(t *testing.T) {
	s := specFor(t, "project: p\nprofile: default\nmounts: {context: [\"~/notes\", \"/home/u/notes/\", \"/srv/notes\", \"~/./notes\"]}\n", nil)
	rs := runSpecOf(t, mustRender(t, s))
	var got []string
	for _, m := range flagValues(rs.Agent.Args, "--mount") {
		f, err := mountFields(m)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(f["target"], render.ContextRoot+"/") {
			got = append(got, f["source"]+" "+f["target"])
		}
	}
	want := []string{"/home/u/notes /context/notes", "/srv/notes /context/notes-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("context mounts (-want +got):\n%s", diff)
	}
}

// server_network: none for a server abox cannot shadow is refused rather than silently not
// applied: the gateway would run the upstream entry with its network.
func TestServerNetworkUnshadowable(t *testing.T) {
	cat := fakeCatalog{
		"github":     {"image": "mcp/github@sha256:" + strings.Repeat("3", 64)},
		"remote-cat": {"type": "remote", "remote": map[string]any{"url": "https://r.example.test/mcp"}},
	}
	custom := config.CustomServers{"notes": {Image: "notes:dev"}}
	tests := []struct {
		server  string
		catalog render.Catalog
		ok      bool
	}{
		{"github", cat, true},
		{"notes", cat, true},
		{"notes", nil, true},
		{"unknown", cat, false},
		{"github", nil, false},
		{"remote-cat", cat, false},
	}
	for _, tc := range tests {
		s := specFor(t, "project: p\nprofile: default\nservers: ["+tc.server+"]\nserver_network: {"+tc.server+": none}\n", custom)
		s.Catalog = tc.catalog
		_, err := render.Render(s)
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "server_network."+tc.server) {
			t.Errorf("server %s, catalog %v: Render error = %v, want ok=%v", tc.server, tc.catalog != nil, err, tc.ok)
		}
		// shared is never refused.
		s = specFor(t, "project: p\nprofile: default\nservers: ["+tc.server+"]\nserver_network: {"+tc.server+": shared}\n", custom)
		s.Catalog = tc.catalog
		if _, err := render.Render(s); err != nil {
			t.Errorf("server %s shared: Render error = %v", tc.server, err)
		}
	}
}

// TestInjectedDropsTheAPIHost: with the credential injected, the agent's allowlist loses the
// model API's host (netd's alone), and keeps it in login-volume mode.
func TestInjectedDropsTheAPIHost(t *testing.T) {
	s := specFor(t, "project: p\nprofile: default\n", nil)
	if p := netdPolicyOf(t, mustRender(t, s)); !slices.Contains(p.Egress, "api.anthropic.com") || p.Model != nil {
		t.Fatalf("login-volume mode: egress %q, model %+v", p.Egress, p.Model)
	}
	s.Config.ClaudeCode.Credential = "claude-key"
	p := netdPolicyOf(t, mustRender(t, s))
	if slices.Contains(p.Egress, "api.anthropic.com") || slices.Contains(p.Mandatory, "api.anthropic.com") {
		t.Errorf("injected: the agent may still reach api.anthropic.com: %q", p.Egress)
	}
	if !slices.Contains(p.Egress, "claude.ai") || p.Model == nil || p.Model.Upstream != "https://api.anthropic.com" || p.Model.ServerTools {
		t.Errorf("injected: egress %q, model %+v", p.Egress, p.Model)
	}
	s.Config.ClaudeCode.ServerTools = "allow"
	if p := netdPolicyOf(t, mustRender(t, s)); p.Model == nil || !p.Model.ServerTools {
		t.Errorf("injected, server tools allowed: model %+v", p.Model)
	}
}

func TestAuthoritative(t *testing.T) {
	arts := []render.Artifact{{Name: "runspec.json"}, {Name: "Dockerfile", Review: true}, {Name: "netd.json"}, {Name: "x", Review: true}}
	if got := render.Authoritative(arts); got != 2 {
		t.Errorf("Authoritative = %d, want 2", got)
	}
	if got := render.Authoritative(nil); got != 0 {
		t.Errorf("render.Authoritative(nil) = %d, want 0", got)
	}
}
