package setup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
)

// fakeProbe answers as a host behind mirrors would; nothing on this machine is asked.
type fakeProbe struct{ npm, goProxy, goSumDB string }

func (p fakeProbe) NPMRegistry(context.Context) (string, error) {
	if p.npm == "" {
		return "", errors.New("npm: not found")
	}
	return p.npm, nil
}

func (p fakeProbe) GoEnv(context.Context, ...string) ([]string, error) {
	return []string{p.goProxy, p.goSumDB}, nil
}

var mirrors = fakeProbe{npm: "https://npm.mirror.test/", goProxy: "https://proxy.mirror.test/go,direct", goSumDB: "sum.mirror.test"}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, ws string) (*State, string) {
	t.Helper()
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	custom := config.CustomServers{"notes": {Image: "example.test/notes:1", Pin: new(bool), Secrets: []config.CustomSecret{{Name: "notes_token", Env: "NOTES_TOKEN"}}}}
	st, err := Load(context.Background(), Env{Config: config.Default(), Custom: custom, ConfigFile: cfgFile, MCPHome: t.TempDir(), Probe: mirrors}, ws)
	if err != nil {
		t.Fatalf("Load = %v", err)
	}
	return st, cfgFile
}

func TestLoadDetects(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "go.mod"), "module x\n")
	write(t, filepath.Join(ws, "app.csproj"), "<Project/>\n")
	write(t, filepath.Join(ws, ".git", "config"), "[remote \"origin\"]\n\turl = https://git.example.test/me/x.git\n")
	st, _ := load(t, ws)
	if !cmp.Equal(st.Toolchains, []string{"go"}) || !cmp.Equal(st.LeftOut, []string{"dotnet"}) {
		t.Errorf("toolchains %q, left out %q; want [go] and [dotnet]", st.Toolchains, st.LeftOut)
	}
	if !cmp.Equal(st.Remotes, []string{"git.example.test"}) {
		t.Errorf("remotes = %q", st.Remotes)
	}
	if diff := cmp.Diff([]string{"proxy.mirror.test", "sum.mirror.test"}, st.Suggested["go"]); diff != "" {
		t.Errorf("go suggestions come from the probe (-want +got):\n%s", diff)
	}
	if st.ConfigExists || st.Existing != nil {
		t.Errorf("config exists %v, existing %v; want neither", st.ConfigExists, st.Existing)
	}
	ans := st.Defaults(manifest.InitArgs{Egress: []string{"Example.COM."}})
	if !strings.Contains(strings.Join(ans.Egress, " "), "example.com") || strings.Contains(strings.Join(ans.Egress, " "), "Example.COM.") {
		t.Errorf("given hosts are canonical: egress = %q", ans.Egress)
	}
	if !cmp.Equal(ans.Toolchains, []string{"go"}) || ans.Profile != config.DefaultProfile {
		t.Errorf("defaults = %+v", ans)
	}
	want := []string{"a.test", "proxy.mirror.test", "sum.mirror.test", "git.example.test"}
	if diff := cmp.Diff(want, st.EgressCandidates(Answers{Egress: []string{"a.test"}, Toolchains: []string{"go"}})); diff != "" {
		t.Errorf("EgressCandidates (-want +got):\n%s", diff)
	}
}

func TestLoadRefusesInvalidExisting(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, manifest.FileName), "version: 1\nproject: \"Bad Name\"\n")
	_, err := Load(context.Background(), Env{Config: config.Default(), ConfigFile: filepath.Join(ws, "none"), MCPHome: ws, Probe: mirrors}, ws)
	if !errors.Is(err, ErrExisting) {
		t.Fatalf("Load = %v, want ErrExisting", err)
	}
	if strings.Contains(err.Error(), ErrExisting.Error()) {
		t.Errorf("the error reads as the manifest's own: %v", err)
	}
}

func TestCheckServers(t *testing.T) {
	st, _ := load(t, t.TempDir())
	if err := st.CheckServers([]string{"notes"}); err != nil {
		t.Errorf("a custom server is known: %v", err)
	}
	err := st.CheckServers([]string{"notes", "nope", "gone"})
	var u *UnknownServersError
	if !errors.As(err, &u) || err.Error() != `unknown MCP server "nope", "gone"` {
		t.Errorf("CheckServers = %v", err)
	}
}

func TestPlanWrites(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "new")
	st, cfgFile := load(t, ws)
	ans := st.Defaults(manifest.InitArgs{Profile: "other", Servers: []string{"notes"}, Credential: "claude"})
	ans.Narrow("notes", []string{"a"}, 2)
	pl, err := st.Plan(ans)
	if err != nil {
		t.Fatalf("Plan = %v", err)
	}
	if pl.NewProfile != "other" || !pl.CredentialChanged {
		t.Errorf("plan = new profile %q, credential changed %v", pl.NewProfile, pl.CredentialChanged)
	}
	if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Plan wrote the workspace: %v", err)
	}
	locked := false
	if err := pl.Write(cfgFile, func() (func(), error) { locked = true; return func() {}, nil }); err != nil {
		t.Fatalf("Write = %v", err)
	}
	data, err := os.ReadFile(cfgFile)
	if err != nil || !strings.Contains(string(data), "other:") || !strings.Contains(string(data), "credential: claude") {
		t.Errorf("config.yaml = %q, %v", data, err)
	}
	m, err := manifest.ReadFile(pl.ManifestPath())
	if err != nil || !locked {
		t.Fatalf("agentbox.yaml: %v, locked %v", err, locked)
	}
	doc, err := manifest.ParseDoc(m, manifest.FileName)
	if err != nil {
		t.Fatal(err)
	}
	got, err := doc.Manifest(manifest.FileName)
	if err != nil || got.Profile != "other" || !cmp.Equal(got.Tools["notes"], []string{"a"}) {
		t.Errorf("written manifest = %+v, %v", got, err)
	}

	// Going back to the login volume drops what only an injected credential uses.
	st.Config.ClaudeCode.APIUpstream = "https://api.example.test"
	st.Doc = doc
	ans.Credential = ""
	pl, err = st.Plan(ans)
	if err != nil || pl.NewProfile != "" || !pl.CredentialChanged || st.Config.ClaudeCode.APIUpstream != "" {
		t.Errorf("plan = %+v, %v; upstream %q", pl, err, st.Config.ClaudeCode.APIUpstream)
	}
}

func TestPlanRefusesInvalidAnswers(t *testing.T) {
	st, _ := load(t, t.TempDir())
	ans := st.Defaults(manifest.InitArgs{})
	ans.Masks = []string{"/etc/passwd"}
	if _, err := st.Plan(ans); !errors.Is(err, ErrAnswers) {
		t.Errorf("Plan = %v, want ErrAnswers", err)
	}
}

func TestNarrow(t *testing.T) {
	var a Answers
	a.Narrow("s", nil, 3)
	a.Narrow("s", []string{"a", "b", "c"}, 3)
	if a.Tools != nil {
		t.Errorf("none or every tool is no narrowing: %v", a.Tools)
	}
	a.Narrow("s", []string{"a"}, 3)
	if !cmp.Equal(a.Tools, map[string][]string{"s": {"a"}}) {
		t.Errorf("tools = %v", a.Tools)
	}
}

func TestSummary(t *testing.T) {
	a := Answers{Project: "p", Profile: "default", PermissionMode: "plan", Egress: []string{"a.test", "b.test"}}
	want := "project p · profile default · servers none · toolchains none · egress a.test, b.test · mode plan · credential login volume"
	if got := a.Summary(); got != want {
		t.Errorf("Summary = %q", got)
	}
	a.Credential = "claude"
	if got := a.Summary(); !strings.HasSuffix(got, "credential injected from secret claude") {
		t.Errorf("Summary = %q", got)
	}
}

func TestCheckContextDirs(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, "docs", "f"), "x")
	if err := CheckContextDirs("~/docs "+home, home); err != nil {
		t.Errorf("CheckContextDirs = %v", err)
	}
	for in, want := range map[string]string{
		"docs":        "write an absolute path",
		"~/docs/f":    "is not a directory",
		"~/missing":   "is not a directory",
		home + " rel": "rel: write an absolute path",
	} {
		if err := CheckContextDirs(in, home); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckContextDirs(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestReport(t *testing.T) {
	store := t.TempDir()
	m := &manifest.Manifest{Project: "p", Profile: "default", Egress: []string{"a.test"}, Run: manifest.Run{PermissionMode: "plan"}}
	cfg := config.Default()
	cfg.ClaudeCode.Credential = "claude"
	pl := &Plan{Manifest: m, st: &State{Workspace: "/ws", Config: cfg}}
	rep := pl.Report(store)
	if !rep.CredentialMissing || rep.CredentialErr != nil {
		t.Fatalf("report = %+v", rep)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	want := "wrote /ws/agentbox.yaml (project p, profile default)\n" +
		"  servers: none\n  toolchains: none\n" +
		"  egress: a.test (plus the Claude Code hosts abox always allows)\n" +
		"  permission mode: plan\n" +
		"  Claude credential: secret claude, injected by netd (the agent holds a placeholder)\n" +
		"next: store the credential with `abox secrets set claude` (an API key, or the token `claude setup-token` prints)\n" +
		"next: `abox up` builds the images and records this manifest as approved\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}
	write(t, filepath.Join(store, "claude"), "sk-test")
	if err := os.Chmod(filepath.Join(store, "claude"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := pl.Report(store); rep.CredentialMissing || rep.CredentialErr == nil {
		t.Errorf("a readable credential is an error to warn about: %+v", rep)
	}
}

func TestServerLabel(t *testing.T) {
	e := catalog.Entry{Name: "s", Type: "server", Image: "example.test/s:1", Pin: true, Secrets: []catalog.Secret{{Name: "tok"}}}
	if got := ServerLabel(e); got != "s (secret tok, unpinned image)" {
		t.Errorf("ServerLabel = %q", got)
	}
	if got := ServerLabel(catalog.Entry{Name: "r", Type: "remote"}); got != "r (remote)" {
		t.Errorf("ServerLabel = %q", got)
	}
	if got := ServerLabel(catalog.Entry{Name: "p", Type: "poci"}); got != "p" {
		t.Errorf("ServerLabel = %q", got)
	}
}
