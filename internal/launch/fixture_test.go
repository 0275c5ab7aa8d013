package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/sandbox/sandboxtest"
	"github.com/aboxhq/abox/internal/telemetry"
)

// binary is the sha256 the fixture's netd image carries, as the one of the abox that runs.
const binary = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"

const demoManifest = "version: 1\nproject: demo\nprofile: default\negress: [example.com]\nrun:\n  on_exec_change: fail\n"

// fixture is a project rendered, approved and baselined as `abox up` leaves it, a git
// repository with one commit, and a fake docker whose images and network exist.
type fixture struct {
	t    *testing.T
	fake *dockertest.Fake
	env  Env
	rs   *render.RunSpec
	ws   string

	mu       sync.Mutex
	events   []string // "daemon", then every docker call's first two arguments, in order
	warnings bytes.Buffer
	progress bytes.Buffer
}

// netdOutput is what a fake netd prints: its ready line, then the line of its finish, which the
// teardown of a run whose agent ran waits for.
const netdOutput = `{"event":"ready"}` + "\n" + `{"event":"finished"}` + "\n"

func newFixture(t *testing.T, manifestYAML string) *fixture {
	t.Helper()
	root := t.TempDir()
	ps := paths.Paths{Config: filepath.Join(root, "config"), State: filepath.Join(root, "state")}
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{ws, home, ps.Config} {
		must(t, os.MkdirAll(d, 0o755))
	}
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = User\n\temail = user@example.invalid\n[init]\n\tdefaultBranch = main\n")
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	writeFile(t, filepath.Join(ws, "agentbox.yaml"), manifestYAML)
	writeFile(t, filepath.Join(ws, "Makefile"), "all:\n")
	git(t, ws, "init", "--quiet")
	git(t, ws, "add", ".")
	git(t, ws, "commit", "--quiet", "-m", "first")
	if os.Geteuid() == 0 { // the agent runs as the workspace owner, which root never may be
		chownAll(t, ws, 1000, 1000)
		// isolate runs git in the workspace as its owner, who must reach it.
		must(t, os.Chmod(root, 0o755))
		must(t, os.Chmod(filepath.Dir(root), 0o755))
	}
	p, err := project.Load(ws, ps)
	must(t, err)
	spec, err := p.Spec(context.Background(), project.Host{Version: "0.0.0-test", Home: home, NetdBinary: binary})
	must(t, err)
	arts, err := render.Render(spec)
	must(t, err)
	_, err = artifact.Write(p.State, arts)
	must(t, err)
	must(t, approval.Record(p.State, p.Raw))
	rs, err := artifact.ReadRunSpec(p.State)
	must(t, err)
	_, err = sandbox.RecordBaseline(p.State, home, rs, "2026-01-01T00:00:00Z")
	must(t, err)

	f := &fixture{t: t, fake: dockertest.New(t), rs: rs, ws: ws}
	client := docker.NewClient(recorder{f}, nil)
	f.env = Env{
		Docker:  client,
		Project: p,
		Preflight: &sandbox.Preflight{
			Docker: client, Gateways: &gateway.Manager{Docker: client}, Project: p.State, Manifest: p.Manifest, Raw: p.Raw,
			BinarySHA256: binary, Home: home,
			Render: func() ([]render.Artifact, error) { return render.Render(spec) },
		},
		Daemon:   func(context.Context) error { f.event("daemon"); return nil },
		Warden:   sandboxtest.Warden(client),
		Clones:   &isolate.Repo{Project: p.State},
		Home:     home,
		Now:      time.Now,
		Progress: &f.progress,
		Warn: func(hint, format string, args ...any) {
			fmt.Fprintf(&f.warnings, "warning: "+format+"\n", args...)
		},
	}
	f.built()
	return f
}

// recorder passes each docker call to the fake, noting it in the fixture's events first.
type recorder struct{ f *fixture }

func (r recorder) Run(ctx context.Context, inv docker.Invocation) (docker.Result, error) {
	r.f.event(strings.Join(inv.Args[:min(2, len(inv.Args))], " "))
	return r.f.fake.Run(ctx, inv)
}

func (f *fixture) event(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

// Events returns what happened so far, in order.
func (f *fixture) Events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// started reports whether any container was started or created: netd's `docker run`, the
// agent's create or start. The login check's `run --rm` does not count.
func (f *fixture) started() bool { return f.startedSince(0) }

// startedSince is started for the docker calls after the first n.
func (f *fixture) startedSince(n int) bool {
	for _, c := range f.fake.Calls()[n:] {
		switch {
		case c.Args[0] == "create", c.Args[0] == "start":
			return true
		case c.Args[0] == "run" && !slices.Contains(c.Args, "--rm"):
			return true
		}
	}
	return false
}

// built answers the preflight's inspections as after `abox up`.
func (f *fixture) built() {
	f.fake.On("image inspect --format {{json .}} "+f.rs.Netd.Image, jsonOf(map[string]any{
		"Id": "sha256:1", "Config": map[string]any{"Labels": map[string]string{sandbox.BinaryLabel: binary}}})).Optional()
	f.fake.On("image inspect --format {{json .}} "+f.rs.Agent.Image, jsonOf(map[string]any{"Id": "sha256:2"})).Optional()
	f.fake.On("network inspect --format {{json .}} "+f.rs.Network, jsonOf(map[string]any{"Name": f.rs.Network, "Driver": "bridge"})).Optional()
}

// loggedIn answers the login check: the project's volume holds a login.
func (f *fixture) loggedIn() {
	f.fake.On("volume inspect", jsonOf(map[string]any{"Name": f.rs.ClaudeVol})).Optional()
	f.fake.On(strings.Join(f.rs.LoginCheck.Argv(), " "), docker.Result{}).Optional()
}

// agent answers a whole run whose agent prints stream and exits with code; during, if set,
// runs while the agent runs (it is what the agent does to the workspace).
func (f *fixture) agent(stream string, code int, during func()) {
	f.fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	f.fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
	f.fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	f.fake.On("exec", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)})
	f.fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(time.Second) // netd outlives the agent
		return docker.Result{}, nil
	}).Optional()
	f.fake.OnFunc("start", func(docker.Invocation) (docker.Result, error) {
		if during != nil {
			during()
		}
		return docker.Result{Stdout: []byte(stream), ExitCode: code}, nil
	})
	f.fake.On("container inspect", docker.Result{Stdout: fmt.Appendf(nil, `{"State":{"Running":false,"ExitCode":%d}}`, code)})
	f.fake.On("stop", docker.Result{}).Optional()
	f.fake.On("kill --signal USR1", docker.Result{}).Optional()
	f.fake.On("kill", docker.Result{}).Optional()
	f.fake.On("rm", docker.Result{}).Optional()
	f.fake.On("cp", docker.Result{}).Optional()
}

// records returns the runs recorded in runs.jsonl.
func (f *fixture) records() []telemetry.RunRecord {
	f.t.Helper()
	data, err := os.ReadFile(f.env.Project.State.RunsIndex())
	if os.IsNotExist(err) {
		return nil
	}
	must(f.t, err)
	var out []telemetry.RunRecord
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r telemetry.RunRecord
		must(f.t, json.Unmarshal([]byte(l), &r))
		out = append(out, r)
	}
	return out
}

const exited = `{"type":"result","subtype":"success","is_error":false,"result":"done"}` + "\n"

func jsonOf(v any) docker.Result {
	b, _ := json.Marshal(v)
	return docker.Result{Stdout: append(b, '\n')}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(data), 0o644))
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func chownAll(t *testing.T, dir string, uid, gid int) {
	t.Helper()
	must(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}))
}
