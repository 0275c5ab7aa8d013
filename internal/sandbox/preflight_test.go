package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// preflightFixture is a project rendered, written and approved as `abox up` leaves it, with a
// fake docker whose images and network exist.
type preflightFixture struct {
	t    *testing.T
	pf   *Preflight
	fake *dockertest.Fake
	home string
	rs   *render.RunSpec
	raw  string
}

const pfBinary = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"

func newPreflightFixture(t *testing.T, manifestYAML string) *preflightFixture {
	t.Helper()
	root := t.TempDir()
	ps := paths.Paths{Config: filepath.Join(root, "config"), State: filepath.Join(root, "state")}
	ws := filepath.Join(root, "ws")
	home := filepath.Join(root, "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 { // the agent runs as the workspace owner, which root never may be
		if err := os.Chown(ws, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, manifest.FileName), []byte(manifestYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse([]byte(manifestYAML), manifest.FileName)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, err := owner.StatOwner(ws)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(filepath.Join(root, "mcp"), nil)
	if err != nil {
		t.Fatal(err)
	}
	project := ps.Project(ws)
	id := render.Identity{UID: uid, GID: gid}
	spec := render.Spec{Version: "0.0.0-test", Manifest: m, Config: config.Default(), Paths: ps,
		Project: project, Home: home, Catalog: cat, Agent: id, NetdBinary: pfBinary}
	arts, err := render.Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := artifact.Write(project, arts); err != nil {
		t.Fatal(err)
	}
	if err := approval.Record(project, []byte(manifestYAML)); err != nil {
		t.Fatal(err)
	}
	rs, err := artifact.ReadRunSpec(project)
	if err != nil {
		t.Fatal(err)
	}
	fake := dockertest.New(t)
	f := &preflightFixture{t: t, fake: fake, home: home, rs: rs, raw: manifestYAML}
	client := docker.NewClient(fake, nil)
	f.pf = &Preflight{
		Docker: client, Gateways: &gateway.Manager{Docker: client}, Project: project, Manifest: m, Raw: []byte(manifestYAML),
		Identity: id, BinarySHA256: pfBinary, Home: home,
		Render: func() ([]render.Artifact, error) { return render.Render(spec) },
	}
	return f
}

// built answers the inspects of the images and the network as after `abox up`.
func (f *preflightFixture) built() *preflightFixture {
	f.fake.On("image inspect --format {{json .}} "+f.rs.Netd.Image, jsonOf(map[string]any{
		"Id": "sha256:1", "Config": map[string]any{"Labels": map[string]string{BinaryLabel: pfBinary}}})).Optional()
	f.fake.On("image inspect --format {{json .}} "+f.rs.Agent.Image, jsonOf(map[string]any{"Id": "sha256:2"})).Optional()
	f.fake.On("network inspect --format {{json .}} "+f.rs.Network, jsonOf(map[string]any{"Name": f.rs.Network, "Driver": "bridge"})).Optional()
	return f
}

func jsonOf(v any) docker.Result {
	b, _ := json.Marshal(v)
	return docker.Result{Stdout: append(b, '\n')}
}

func noSuch(kind string) docker.Result {
	return docker.Result{ExitCode: 1, Stderr: []byte("Error: No such " + kind + ": x\n")}
}

const pfManifest = "version: 1\nproject: demo\nprofile: default\negress: [example.com]\n"

func TestPreflightPasses(t *testing.T) {
	f := newPreflightFixture(t, pfManifest).built()
	ready, err := f.pf.Run(context.Background())
	if err != nil {
		t.Fatalf("Run = %v, want a ready sandbox", err)
	}
	if ready.RunSpec.Agent.Image != f.rs.Agent.Image || len(ready.Baseline) == 0 || ready.Gateway.IsValid() {
		t.Errorf("Ready = image %q, %d baseline bytes, gateway %v; want the runspec's image, a baseline and no gateway",
			ready.RunSpec.Agent.Image, len(ready.Baseline), ready.Gateway)
	}
}

// TestPreflightRefuses breaks one thing at a time; each is refused with its own sentinel, before
// docker is asked anything the refusal makes moot.
func TestPreflightRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *preflightFixture)
		want  error
		msg   string
	}{
		{"never approved", func(f *preflightFixture) { os.Remove(f.pf.Project.Approved()) }, approval.ErrNotApproved, "has not been approved"},
		{"approval corrupt", func(f *preflightFixture) { write(t, f.pf.Project.Approved(), "version: [1\n") }, approval.ErrCorrupt, "does not parse"},
		{"approval symlinked", func(f *preflightFixture) {
			os.Remove(f.pf.Project.Approved())
			if err := os.Symlink(filepath.Join(f.pf.Project.Workspace, manifest.FileName), f.pf.Project.Approved()); err != nil {
				t.Fatal(err)
			}
		}, approval.ErrCorrupt, "cannot be read"},
		{"manifest changed", func(f *preflightFixture) {
			raw := f.raw + "mounts:\n  watch: [x]\n"
			m, err := manifest.Parse([]byte(raw), manifest.FileName)
			if err != nil {
				t.Fatal(err)
			}
			f.pf.Manifest, f.pf.Raw = m, []byte(raw)
		}, nil, "changed since it was approved"},
		{"nothing rendered", func(f *preflightFixture) { os.RemoveAll(f.pf.Project.Artifacts()) }, ErrRunSpec, "not rendered"},
		{"owner changed", func(f *preflightFixture) { f.pf.Identity = render.Identity{UID: 4242, GID: 4343} }, ErrOwnerChanged, "built for"},
		{"artifact tampered", func(f *preflightFixture) {
			p := filepath.Join(f.pf.Project.Artifacts(), render.ResolvConf)
			os.Chmod(p, 0o644)
			write(t, p, "nameserver 10.0.0.1\n")
		}, ErrTampered, "artifacts differ from artifacts.json"},
		{"artifacts stale", func(f *preflightFixture) {
			render0 := f.pf.Render
			f.pf.Render = func() ([]render.Artifact, error) {
				arts, err := render0()
				for i := range arts {
					if arts[i].Name == render.RunSpecFile {
						arts[i].Data = append(arts[i].Data, ' ')
					}
				}
				return arts, err
			}
		}, ErrStale, "out of date"},
		{"render fails", func(f *preflightFixture) {
			f.pf.Render = func() ([]render.Artifact, error) { return nil, errors.New("no ca file") }
		}, nil, "no ca file"},
		{"netd image missing", func(f *preflightFixture) {
			f.fake.On("image inspect --format {{json .}} "+f.rs.Netd.Image, noSuch("image"))
		}, ErrImageMissing, "is missing"},
		{"netd image of another binary", func(f *preflightFixture) {
			f.fake.On("image inspect --format {{json .}} "+f.rs.Netd.Image, jsonOf(map[string]any{
				"Id": "sha256:1", "Config": map[string]any{"Labels": map[string]string{BinaryLabel: "other"}}}))
		}, ErrNetdBinary, "different abox binary"},
		{"agent image missing", func(f *preflightFixture) {
			f.fake.On("image inspect --format {{json .}} "+f.rs.Agent.Image, noSuch("image"))
		}, ErrImageMissing, "is missing"},
		{"network missing", func(f *preflightFixture) {
			f.fake.On("network inspect --format {{json .}} "+f.rs.Network, noSuch("network"))
		}, ErrNetworkMissing, "network " + "abox-net"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newPreflightFixture(t, pfManifest)
			tc.setup(f)
			f.built()
			ready, err := f.pf.Run(context.Background())
			if ready != nil || err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Run = %v, %v; want a refusal saying %q", ready, err, tc.msg)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Run = %v, want it to match %v", err, tc.want)
			}
			var ce *approval.ChangedError
			if tc.name == "manifest changed" && (!errors.As(err, &ce) || !strings.Contains(ce.Diff, "+ mounts:")) {
				t.Errorf("Run = %v, want a ChangedError with the diff", err)
			}
			for _, c := range f.fake.Calls() {
				if c.Args[0] == "run" || c.Args[0] == "create" {
					t.Errorf("a container was started: %q", c.Args)
				}
			}
		})
	}
}

func TestPreflightRefusesAMissingContextDir(t *testing.T) {
	f := newPreflightFixture(t, pfManifest+"mounts:\n  context: [~/notes]\n").built()
	_, err := f.pf.Run(context.Background())
	var r *Refusal
	if !errors.Is(err, ErrContextMissing) || !errors.As(err, &r) || r.Subject != filepath.Join(f.home, "notes") {
		t.Fatalf("Run = %v, want ErrContextMissing naming %s", err, filepath.Join(f.home, "notes"))
	}
	if err := os.Mkdir(filepath.Join(f.home, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pf.Run(context.Background()); err != nil {
		t.Errorf("Run with the context directory there = %v, want nil", err)
	}
}

// TestPreflightBypassNeedsTheBoundary: with bypassPermissions the boundary checks run and a
// failure refuses the run; in other modes they are not consulted.
func TestPreflightBypassNeedsTheBoundary(t *testing.T) {
	boundaryErr := errors.New("boundary.artifacts-private failed")
	for _, tc := range []struct {
		mode   string
		called bool
	}{{"bypassPermissions", true}, {"acceptEdits", false}} {
		f := newPreflightFixture(t, pfManifest+"run:\n  permission_mode: "+tc.mode+"\n").built()
		called := false
		f.pf.Boundary = func(context.Context) error { called = true; return boundaryErr }
		_, err := f.pf.Run(context.Background())
		if called != tc.called || errors.Is(err, boundaryErr) != tc.called {
			t.Errorf("%s: boundary called %v, Run = %v; want called %v", tc.mode, called, err, tc.called)
		}
	}
}

func TestRefusalSubject(t *testing.T) {
	f := newPreflightFixture(t, pfManifest).built()
	f.pf.Identity = render.Identity{UID: 4242, GID: 4343}
	_, err := f.pf.Run(context.Background())
	var r *Refusal
	if !errors.As(err, &r) || r.Subject != "4242:4343" || r.Kind != ErrOwnerChanged {
		t.Errorf("Run = %#v, want ErrOwnerChanged with subject 4242:4343", err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

const pfRemoteManifest = pfManifest + "remote_servers:\n  ctx:\n    url: https://mcp.example.com/mcp\n    transport: streamable-http\n"

// TestPreflightGateway: a project with MCP servers needs its profile's gateway running with an
// address on the sandbox's network, which becomes netd's upstream; the scope and token checks
// handed in are consulted, and their errors come back as they are.
func TestPreflightGateway(t *testing.T) {
	gwName := gateway.Name("default")
	running := func(networks map[string]any) docker.Result {
		return jsonOf(map[string]any{"Name": "/" + gwName, "State": map[string]any{"Running": true},
			"Config":          map[string]any{"Labels": map[string]string{"abox.managed": "true", "abox.role": "gateway"}},
			"NetworkSettings": map[string]any{"Networks": networks}})
	}
	t.Run("not running", func(t *testing.T) {
		f := newPreflightFixture(t, pfRemoteManifest).built()
		f.fake.On("container inspect --format {{json .}} "+gwName, noSuch("container"))
		_, err := f.pf.Run(context.Background())
		var r *Refusal
		if !errors.Is(err, ErrGatewayDown) || !errors.As(err, &r) || r.Subject != "default" {
			t.Fatalf("Run = %v, want ErrGatewayDown for profile default", err)
		}
	})
	t.Run("no address", func(t *testing.T) {
		f := newPreflightFixture(t, pfRemoteManifest).built()
		f.fake.On("container inspect --format {{json .}} "+gwName, running(map[string]any{"other": map[string]any{"IPAddress": "172.31.0.2"}}))
		_, err := f.pf.Run(context.Background())
		var r *Refusal
		if !errors.Is(err, ErrGatewayAddress) || !errors.As(err, &r) || r.Subject != "default" || !strings.Contains(err.Error(), "not attached") {
			t.Fatalf("Run = %v, want ErrGatewayAddress for profile default", err)
		}
	})
	t.Run("scope refused", func(t *testing.T) {
		f := newPreflightFixture(t, pfRemoteManifest).built()
		f.fake.On("container inspect --format {{json .}} "+gwName, running(nil))
		scopeErr := errors.New("another project's tools")
		f.pf.MCPScope = func(string, *policy.Netd, *docker.Container) error { return scopeErr }
		if _, err := f.pf.Run(context.Background()); !errors.Is(err, scopeErr) {
			t.Fatalf("Run = %v, want the scope check's error", err)
		}
	})
	t.Run("ready", func(t *testing.T) {
		f := newPreflightFixture(t, pfRemoteManifest).built()
		f.fake.On("container inspect --format {{json .}} "+gwName, running(map[string]any{f.rs.Network: map[string]any{"IPAddress": "172.30.0.5"}}))
		var authed bool
		f.pf.GatewayAuth = func(_ context.Context, rs *render.RunSpec, gw *docker.Container) error {
			authed = rs != nil && gw != nil && gw.State.Running
			return nil
		}
		ready, err := f.pf.Run(context.Background())
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := ready.Gateway.Addr().String(); got != "172.30.0.5" || ready.Gateway.Port() == 0 || !authed {
			t.Errorf("Ready.Gateway = %v, token checked %v; want 172.30.0.5 with netd's upstream port, checked", ready.Gateway, authed)
		}
	})
}

// TestMissingContext: every context directory that is not a directory is listed, ~ expanded,
// in the manifest's order; one that exists is not.
func TestMissingContext(t *testing.T) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "here"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m := &manifest.Manifest{Mounts: manifest.Mounts{Context: []string{"~/gone", "~/here", "~/file", filepath.Join(home, "also-gone")}}}
	got := MissingContext(m, home)
	want := []string{filepath.Join(home, "gone"), filepath.Join(home, "file"), filepath.Join(home, "also-gone")}
	if !slices.Equal(got, want) {
		t.Errorf("MissingContext = %q, want %q", got, want)
	}
	if got := MissingContext(&manifest.Manifest{}, home); got != nil {
		t.Errorf("MissingContext(no context) = %q, want none", got)
	}
}
