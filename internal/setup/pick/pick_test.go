package pick_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/setup"
	"github.com/aboxhq/abox/internal/setup/pick"
)

// noProbe is a host whose npm and go are not installed: nothing on this machine is asked.
type noProbe struct{}

func (noProbe) NPMRegistry(context.Context) (string, error) { return "", errors.New("npm: not found") }
func (noProbe) GoEnv(context.Context, ...string) ([]string, error) {
	return nil, errors.New("go: not found")
}

// state is what init starts from in an empty workspace with the custom servers given, and the
// home directory holding a context directory ctx.
func state(t *testing.T, custom config.CustomServers) (*setup.State, string) {
	t.Helper()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "ctx"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := setup.Env{Config: config.Default(), Custom: custom, ConfigFile: filepath.Join(t.TempDir(), "config.yaml"), MCPHome: t.TempDir(), Probe: noProbe{}}
	st, err := setup.Load(context.Background(), env, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st, home
}

// notes is a custom server of three tools.
var notes = config.CustomServers{"notes": {Image: "example.test/notes:1", Pin: new(bool), Tools: []string{"add", "list", "drop"}}}

// run drives the picker in accessible mode with one answer per line, with the server notes.
func run(t *testing.T, answers ...string) (setup.Answers, string, error) {
	t.Helper()
	return runWith(t, notes, answers...)
}

func runWith(t *testing.T, custom config.CustomServers, answers ...string) (setup.Answers, string, error) {
	t.Helper()
	st, home := state(t, custom)
	var out bytes.Buffer
	in := strings.NewReader(strings.Join(answers, "\n") + "\n")
	ans, err := pick.Run(context.Background(), st, st.Defaults(manifest.InitArgs{}), pick.Options{In: in, Out: &out, Accessible: true, Home: home})
	return ans, out.String(), err
}

// every answers each question once: a new profile, the server narrowed to its first tool,
// python, a typed host, a context directory under ~, plan mode and an injected credential.
var every = []string{
	"2", "work", // profile: + new profile, named work
	"1", "0", // servers: notes
	"y", "1", "0", // narrow notes to add
	"1", "0", // toolchains: python
	"0", "extra.example.com", // none of python's suggestions; one typed host
	"~/ctx",      // context
	"4",          // permission mode: plan
	"2", "cred1", // injected credential, secret cred1
	"y", // write it
}

// TestRunAccessible: scripted answers, read line by line, become the answers init writes; the
// prompts go to the output given.
func TestRunAccessible(t *testing.T) {
	ans, out, err := run(t, every...)
	if err != nil {
		t.Fatalf("Run = %v; output:\n%s", err, out)
	}
	want := setup.Answers{
		Project: ans.Project, Profile: "work", PermissionMode: manifest.ModePlan,
		Servers: []string{"notes"}, Tools: map[string][]string{"notes": {"add"}},
		Toolchains: []string{"python"}, Egress: []string{"extra.example.com"},
		Context: []string{"~/ctx"}, Credential: "cred1",
	}
	if diff := cmp.Diff(want, ans, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Masks" }, cmp.Ignore())); diff != "" {
		t.Errorf("Run answers (-want +got):\n%s", diff)
	}
	for _, prompt := range []string{"Gateway profile", "New profile name", "MCP servers (behind the gateway)", "Narrow notes's 3 tools?",
		"Toolchains", "Egress allowlist", "More hosts", "Read-only context directories", "Claude Code permission mode",
		"Claude credential", "Secret name", "Write agentbox.yaml?"} {
		if !strings.Contains(out, prompt) {
			t.Errorf("output lacks the prompt %q", prompt)
		}
	}
}

// TestRunEnds: declining the summary cancels init, and input that runs out on an answer a
// select refuses (where huh's accessible select panics) ends it with an error.
func TestRunEnds(t *testing.T) {
	declined := append(append([]string{}, every[:len(every)-1]...), "n")
	if _, _, err := run(t, declined...); !errors.Is(err, pick.ErrCancelled) {
		t.Errorf("Run declined = %v, want ErrCancelled", err)
	}
	for _, answers := range [][]string{{"x"}, append(append([]string{}, every[:13]...), "y")} {
		if _, out, err := run(t, answers...); !errors.Is(err, pick.ErrInputEnded) {
			t.Errorf("Run(%q) = %v, want ErrInputEnded; output:\n%s", answers, err, out)
		}
	}
}

// TestRunRefusesContext: a context directory that does not exist is refused, whatever huh's
// accessible input did with it.
func TestRunRefusesContext(t *testing.T) {
	answers := append(append([]string{}, every[:11]...), "~/missing")
	if _, _, err := run(t, answers...); err == nil || !strings.Contains(err.Error(), "~/missing is not a directory") {
		t.Errorf("Run = %v, want ~/missing refused", err)
	}
}

// TestRunWithoutServers: with no server known the question is skipped, and said to be; the
// login volume clears the credential.
func TestRunWithoutServers(t *testing.T) {
	// profile, toolchains (none, so no egress to offer), more hosts, context, mode, credential, write
	ans, out, err := runWith(t, nil, "1", "0", "", "", "1", "1", "y")
	if err != nil {
		t.Fatalf("Run = %v; output:\n%s", err, out)
	}
	if !strings.Contains(out, "MCP servers: none known (no Docker MCP Toolkit catalog, no custom-servers.yaml); skipped\n") {
		t.Errorf("output does not say the servers were skipped:\n%s", out)
	}
	if ans.Profile != "default" || len(ans.Servers) != 0 || len(ans.Egress) != 0 || ans.Credential != "" || ans.PermissionMode != manifest.PermissionModes[0] {
		t.Errorf("Run answers = %+v", ans)
	}
}
