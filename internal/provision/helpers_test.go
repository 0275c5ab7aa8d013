package provision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

// binarySum stands for the sha256 of the running abox binary, which names the netd image.
const binarySum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// basic is a manifest that renders with nothing but config.yaml's defaults.
const basic = "version: 1\nproject: p\nprofile: default\negress:\n  - a.example.com\n"

// fixture is a project loaded from a temporary workspace, config and state, with an Env whose
// docker is the recording fake and whose events and questions are recorded.
type fixture struct {
	t      *testing.T
	root   string
	fake   *dockertest.Fake
	env    *Env
	ps     paths.Paths
	ws     string
	events []Event
	asked  []string // every question Confirm was asked
	answer bool     // what Confirm answers
}

func newFixture(t *testing.T, manifest string) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, root: root, fake: dockertest.New(t), ws: filepath.Join(root, "work")}
	f.ps = paths.Paths{Config: filepath.Join(root, "config"), State: filepath.Join(root, "state")}
	claude := []byte("claude\n")
	sum := sha256.Sum256(claude)
	write(t, filepath.Join(root, "claude"), string(claude))
	// The agent's identity is fixed: the workspace belongs to whoever runs the tests, root in CI.
	write(t, f.ps.ConfigFile(), "agent: {uid: 1000, gid: 1000}\n"+
		"claude_code: {source: file, version: 2.1.0, path: ~/claude, sha256: "+hex.EncodeToString(sum[:])+"}\n"+
		"profiles:\n  default: {port: 8811}\n  work: {port: 8812}\n")
	f.writeManifest(manifest)
	d := docker.NewClient(f.fake, nil)
	f.env = &Env{
		Docker: d,
		Spec: func(p *project.Project) (render.Spec, error) {
			return p.Spec(context.Background(), project.Host{Version: "test", Home: root, NetdBinary: binarySum, MCPHome: filepath.Join(root, "mcp")})
		},
		Images:           &images.Builder{Docker: d, Home: root},
		Executable:       filepath.Join(root, "claude"), // any file: it is staged as the netd image's abox
		ExecutableSHA256: func() string { return binarySum },
		Home:             root,
		Report:           func(ev Event) { f.events = append(f.events, ev) },
		Now:              func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) },
	}
	return f
}

// project loads the project as every command does, and points the gateway's Env at it.
func (f *fixture) project() *project.Project {
	f.t.Helper()
	p, err := project.Load(f.ws, f.ps)
	if err != nil {
		f.t.Fatal(err)
	}
	f.env.Gateway = &gateway.Env{Docker: f.env.Docker, Paths: f.ps, Config: p.Config, Custom: p.Custom}
	return p
}

func (f *fixture) writeManifest(m string) { write(f.t, filepath.Join(f.ws, "agentbox.yaml"), m) }

// terminal makes Confirm record each question and answer yes or no.
func (f *fixture) terminal(yes bool) {
	f.answer = yes
	f.env.Confirm = func(q string) bool { f.asked = append(f.asked, q); return f.answer }
}

// commands lists the docker calls so far by their first two arguments.
func (f *fixture) commands() []string {
	var out []string
	for _, c := range f.fake.Calls() {
		out = append(out, strings.Join(c.Args[:min(2, len(c.Args))], " "))
	}
	return out
}

// upReplies answers everything `abox up` asks of docker for a project that declares no server:
// a network, no ~/.claude volume yet, no image.
func (f *fixture) upReplies() {
	f.fake.On("network inspect", docker.Result{Stdout: []byte(`{"Name":"abox-net","Id":"n1","Driver":"bridge"}`)})
	f.fake.On("volume inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such volume: abox-claude\n")})
	f.fake.On("volume create", docker.Result{})
	f.fake.On("image inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such image: abox-agent-p\n")}).Optional()
	f.fake.On("build", docker.Result{}).Optional()
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
