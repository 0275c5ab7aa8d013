package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
)

const testCatalog = `version: 3
name: docker-mcp
registry:
  github:
    type: server
    image: ghcr.io/github/github-mcp-server@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    secrets: [{name: github.personal_access_token, env: GITHUB_PERSONAL_ACCESS_TOKEN}]
  fetch:
    type: server
    image: mcp/fetch@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
`

func testCat(t *testing.T) *catalog.Catalog {
	t.Helper()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "catalogs", "docker-mcp.yaml"), testCatalog, 0o600)
	no := false
	cat, err := catalog.Load(home, config.CustomServers{
		"notes": {Image: "sha256:" + strings.Repeat("a", 64), Pin: &no, Secrets: []config.CustomSecret{{Name: "notes.key", Env: "NOTES_KEY"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestNeeds(t *testing.T) {
	m := &manifest.Manifest{
		Servers:    []string{"github", "fetch", "notes", "unknown"},
		EnvSecrets: map[string]string{"API_KEY": "demo.shared", "DB": "db.url"},
		RemoteServers: map[string]manifest.RemoteServer{"acme": {URL: "https://acme.example/mcp",
			Secrets: []manifest.SecretEnv{{Name: "demo.shared", Env: "ACME"}}}},
	}
	got := Needs(m, testCat(t))
	want := []Need{
		{"db.url", UseEnv, "DB"},
		{"demo.shared", UseEnv, "API_KEY"},
		{"demo.shared", UseRemote, "acme"},
		{"github.personal_access_token", UseServer, "github"},
		{"notes.key", UseServer, "notes"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Needs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"db.url", "demo.shared", "github.personal_access_token", "notes.key"}, Names(got)); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if got[2].String() != "remote acme" {
		t.Errorf("String = %q", got[2].String())
	}
	if n := Needs(m, nil); len(n) != 3 {
		t.Errorf("without a catalog, only env and remote needs: %v", n)
	}
}

func TestGatewayNeedsAndFile(t *testing.T) {
	ctx := context.Background()
	cat := testCat(t)
	u := &gateway.Union{Servers: []string{"github", "notes"},
		Remote: map[string]gateway.Remote{"acme": {Secrets: []gateway.Secret{{Name: "acme.token", Env: "ACME"}}}}}
	needs := GatewayNeeds(u, cat)
	if diff := cmp.Diff([]string{"acme.token", "github.personal_access_token", "notes.key"}, Names(needs)); diff != "" {
		t.Fatalf("GatewayNeeds (-want +got):\n%s", diff)
	}
	st := &FileStore{Dir: t.TempDir()}
	for _, n := range []string{"acme.token", "github.personal_access_token"} {
		if err := st.Set(ctx, n, []byte("fake-"+n)); err != nil {
			t.Fatal(err)
		}
	}
	data, missing, err := GatewayFile(ctx, st, needs)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Join(nonComment(string(data)), "\n")
	if body != "acme.token=fake-acme.token\ngithub.personal_access_token=fake-github.personal_access_token" {
		t.Errorf("secrets file body:\n%s", body)
	}
	if diff := cmp.Diff([]Need{{"notes.key", UseServer, "notes"}}, missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if strings.Contains(string(data), "docker-desktop") {
		t.Error("the file names docker-desktop")
	}
	if data, missing, err := GatewayFile(ctx, st, nil); data != nil || missing != nil || err != nil {
		t.Errorf("no needs = %q, %v, %v", data, missing, err)
	}
	// A value edited in the store to hold a line break would add lines: refused.
	if err := os.WriteFile(filepath.Join(st.Dir, "acme.token"), []byte("x\nnotes.key=forged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := GatewayFile(ctx, st, needs); !errors.Is(err, ErrLineBreak) {
		t.Errorf("a multi-line stored value = %v, want ErrLineBreak", err)
	}
}

// TestGatewayFileDesktop: on Docker Desktop the file holds se:// references, never values.
func TestGatewayFileDesktop(t *testing.T) {
	st := &memStore{kind: KindDesktop, values: map[string]string{"github.personal_access_token": fakeValue}}
	data, _, err := GatewayFile(context.Background(), st, []Need{{"github.personal_access_token", UseServer, "github"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := nonComment(string(data)); !cmp.Equal(got, []string{"github.personal_access_token=se://docker/mcp/github.personal_access_token"}) {
		t.Errorf("Desktop file = %q", got)
	}
}

func TestEnvFile(t *testing.T) {
	ctx := context.Background()
	st := &FileStore{Dir: t.TempDir()}
	if err := st.Set(ctx, "db.url", []byte(fakeValue)); err != nil {
		t.Fatal(err)
	}
	data, err := EnvFile(ctx, st, map[string]string{"DATABASE_URL": "db.url", "ALSO": "db.url"})
	if err != nil || string(data) != "ALSO="+fakeValue+"\nDATABASE_URL="+fakeValue+"\n" {
		t.Errorf("EnvFile = %q, %v", data, err)
	}
	_, err = EnvFile(ctx, st, map[string]string{"API_KEY": "absent.key"})
	var me *MissingError
	if !errors.As(err, &me) || me.Needs[0] != (Need{"absent.key", UseEnv, "API_KEY"}) || !strings.Contains(err.Error(), "absent.key (env API_KEY)") {
		t.Errorf("EnvFile of a missing secret = %v", err)
	}
	if data, err := EnvFile(ctx, st, nil); data != nil || err != nil {
		t.Errorf("EnvFile(nil) = %q, %v", data, err)
	}
}

func TestScrubGatewayFiles(t *testing.T) {
	gw := t.TempDir()
	path := writeFile(t, filepath.Join(gw, "dev", gateway.SecretsFile), "# header\na.b="+fakeValue+"\na.bc=keep\n", 0o600)
	writeFile(t, filepath.Join(gw, "other", gateway.SecretsFile), "x=y\n", 0o600)
	if err := ScrubGatewayFiles(gw, "a.b"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "# header\na.bc=keep\n" {
		t.Errorf("scrubbed file = %q", data)
	}
}

// TestBuildIndex: uses across projects and profiles, by env, server and remote; a project whose
// manifest vanished is reported stale with what its registry entry and approved copy show; a
// broken manifest is isolated.
func TestBuildIndex(t *testing.T) {
	root := t.TempDir()
	ps := paths.Paths{Config: filepath.Join(root, "config"), State: filepath.Join(root, "state")}
	cat := testCat(t)
	project := func(name, profile, yaml string) string {
		ws := filepath.Join(root, name)
		if yaml != "" {
			writeFile(t, filepath.Join(ws, manifest.FileName), yaml, 0o644)
		}
		m, err := manifest.Parse([]byte(yaml), name)
		if err != nil {
			m = &manifest.Manifest{Project: name, Profile: profile}
		}
		if _, err := gateway.Bind(ps.GatewaysDir(), profile, paths.Hash(ws), gateway.NewBinding(ws, m, nil)); err != nil {
			t.Fatal(err)
		}
		return ws
	}
	project("alpha", "work", "project: alpha\nprofile: work\nservers: [github]\nenv_secrets: {DATABASE_URL: demo.shared}\n")
	project("beta", "home", "project: beta\nprofile: home\nenv_secrets: {API_KEY: demo.shared}\n"+
		"remote_servers:\n  acme:\n    url: https://acme.example/mcp\n    headers: {Authorization: \"Bearer ${ACME}\"}\n    secrets: [{name: demo.solo, env: ACME}]\n")
	gone := project("gamma", "work", "project: gamma\nprofile: work\nservers: [github]\nenv_secrets: {TOKEN: gamma.token}\n")
	writeFile(t, ps.Project(gone).Approved(), "project: gamma\nprofile: work\nservers: [github]\nenv_secrets: {TOKEN: gamma.token}\n", 0o600)
	if err := os.Remove(filepath.Join(gone, manifest.FileName)); err != nil {
		t.Fatal(err)
	}
	broken := project("delta", "work", "project: delta\nprofile: work\nservers: [github]\n")
	writeFile(t, filepath.Join(broken, manifest.FileName), "project: delta\nnot_a_key: 1\n", 0o644)

	x, err := BuildIndex(ps, cat)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range x.Uses {
		s := u.Project + " " + u.Secret + " " + u.String()
		if u.Stale {
			s += " (stale)"
		}
		got = append(got, s)
	}
	want := []string{
		"beta demo.shared env API_KEY",
		"beta demo.solo remote acme",
		"alpha demo.shared env DATABASE_URL",
		"alpha github.personal_access_token server github",
		"delta github.personal_access_token server github (stale)",
		"gamma gamma.token env TOKEN (stale)",
		"gamma github.personal_access_token server github (stale)",
	}
	if diff := cmp.Diff(sortStrings(want), sortStrings(got)); diff != "" {
		t.Errorf("uses (-want +got):\n%s", diff)
	}
	if len(x.Stale) != 2 {
		t.Fatalf("stale = %+v, want gamma and delta", x.Stale)
	}
	reasons := x.Stale[0].Project + ": " + x.Stale[0].Reason + " | " + x.Stale[1].Project + ": " + x.Stale[1].Reason
	if !strings.Contains(reasons, "gamma: agentbox.yaml is gone from "+gone) || !strings.Contains(reasons, "delta: agentbox.yaml does not load") {
		t.Errorf("stale reasons: %s", reasons)
	}
	if u := x.UsesOf("demo.shared"); len(u) != 2 {
		t.Errorf("UsesOf(demo.shared) = %v", u)
	}
	if diff := cmp.Diff([]string{"demo.shared", "demo.solo", "gamma.token", "github.personal_access_token"}, x.Secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

func nonComment(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func sortStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// memStore is an in-memory [Store] of either kind.
type memStore struct {
	kind   string
	values map[string]string
	sets   int
}

func (m *memStore) Kind() string  { return m.kind }
func (m *memStore) Claim() string { return "memory" }
func (m *memStore) Set(_ context.Context, name string, v []byte) error {
	m.values[name] = string(v)
	m.sets++
	return nil
}
func (m *memStore) Remove(_ context.Context, name string) error { delete(m.values, name); return nil }
func (m *memStore) List(context.Context) ([]string, error) {
	var out []string
	for k := range m.values {
		out = append(out, k)
	}
	return sortStrings(out), nil
}
func (m *memStore) Value(_ context.Context, name string) ([]byte, error) {
	if m.kind == KindDesktop {
		return nil, ErrNotReadable
	}
	v, ok := m.values[name]
	if !ok {
		return nil, ErrNotStored
	}
	return []byte(v), nil
}
func (m *memStore) Deliver(ctx context.Context, name string) ([]byte, error) {
	if m.kind == KindDesktop {
		return []byte(DesktopRef(name)), nil
	}
	return m.Value(ctx, name)
}
