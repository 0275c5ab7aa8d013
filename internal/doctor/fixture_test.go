package doctor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/watch"
)

// A fixture is a project rendered, written, approved and baselined exactly as `abox up` leaves it, with a
// fake docker that answers like a daemon on which `abox up` ran: images built, network created,
// no gateway, no running sandbox. Tests break one thing and look at one check.
type fixture struct {
	t        *testing.T
	ws       string
	paths    paths.Paths
	project  paths.Project
	manifest string // agentbox.yaml as written
	cfg      *config.Config
	mcpHome  string
	fake     *dockertest.Fake
	binary   string
}

const baseManifest = "version: 1\nproject: demo\nprofile: default\negress: [example.com]\n"

// fixedNow is the clock of every fixture.
var fixedNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func newFixture(t *testing.T, manifestYAML string) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{
		t: t, ws: filepath.Join(root, "ws"), manifest: manifestYAML, cfg: config.Default(),
		paths:   paths.Paths{Config: filepath.Join(root, "config"), State: filepath.Join(root, "state")},
		mcpHome: filepath.Join(root, "mcp"), binary: strings.Repeat("b", 64),
	}
	f.project = f.paths.Project(f.ws)
	mkdir(t, f.ws)
	if os.Geteuid() == 0 { // the agent runs as the workspace owner, which root never may be
		if err := os.Chown(f.ws, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	f.writeWS(manifest.FileName, manifestYAML)
	f.render()
	f.approve()
	f.baseline()
	f.fake = dockertest.New(t)
	return f
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// writeWS writes a workspace file (a "->target" content makes a symlink).
func (f *fixture) writeWS(name, content string) {
	f.t.Helper()
	p := filepath.Join(f.ws, filepath.FromSlash(name))
	mkdir(f.t, filepath.Dir(p))
	os.Remove(p)
	if target, ok := strings.CutPrefix(content, "->"); ok {
		if err := os.Symlink(target, p); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// fifo puts a FIFO in a workspace file's place, as the agent can.
func (f *fixture) fifo(name string) {
	f.t.Helper()
	p := filepath.Join(f.ws, filepath.FromSlash(name))
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) parsed() *manifest.Manifest {
	f.t.Helper()
	m, err := manifest.Parse([]byte(f.manifest), manifest.FileName)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

func (f *fixture) catalog() *catalog.Catalog {
	f.t.Helper()
	c, err := catalog.Load(f.mcpHome, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) spec() render.Spec {
	uid, gid, err := owner.StatOwner(f.ws) // 1000:1000 as root (see newFixture), else the tester's
	if err != nil {
		f.t.Fatal(err)
	}
	return render.Spec{Version: "0.0.0-test", Manifest: f.parsed(), Config: f.cfg, Paths: f.paths,
		Project: f.project, Home: "/home/u", Catalog: f.catalog(), Agent: render.Identity{UID: uid, GID: gid}}
}

// render renders and writes the artifacts as `abox render` does.
func (f *fixture) render() {
	f.t.Helper()
	arts, err := render.Render(f.spec())
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := artifact.Write(f.project, arts); err != nil {
		f.t.Fatal(err)
	}
}

// baseline records the workspace as it is now as the baseline, as `abox up` does for a project
// that has none.
func (f *fixture) baseline() {
	f.t.Helper()
	os.Remove(f.project.Baselines())
	e := f.env()
	if _, _, err := watch.RecordInitial(f.project.Baselines(), watch.Take(e.watchScope()), e.timestamp()); err != nil {
		f.t.Fatal(err)
	}
}

// approve records the manifest as `abox up` does.
func (f *fixture) approve() {
	f.t.Helper()
	mkdir(f.t, f.project.Dir)
	if err := os.WriteFile(f.project.Approved(), []byte(f.manifest), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// env returns a fresh Env (empty caches) on the fixture as it is now.
func (f *fixture) env() *Env {
	spec := f.spec()
	cat := spec.Catalog.(*catalog.Catalog)
	return &Env{
		Docker:   docker.NewClient(f.fake, nil),
		LookPath: func(string) (string, error) { return "/usr/bin/docker", nil },
		Paths:    f.paths, Project: f.project, Home: "/home/u",
		Manifest: spec.Manifest, ManifestRaw: []byte(f.manifest), Config: f.cfg, Catalog: cat,
		Render:       func() ([]render.Artifact, error) { return render.Render(spec) },
		BinarySHA256: f.binary, Now: func() time.Time { return fixedNow },
	}
}

// run runs one check on a fresh Env.
func (f *fixture) run(c func(context.Context, *Env) Finding) Finding {
	return c(context.Background(), f.env())
}

func (f *fixture) runSpec() *render.RunSpec {
	f.t.Helper()
	rs, err := artifact.ReadRunSpec(f.project)
	if err != nil {
		f.t.Fatal(err)
	}
	return rs
}

// editRunSpec changes runspec.json in place, as a tamperer would (artifacts.json is left alone).
func (f *fixture) editRunSpec(edit func(rs *render.RunSpec)) {
	f.t.Helper()
	rs := f.runSpec()
	edit(rs)
	data, _ := json.MarshalIndent(rs, "", "  ")
	f.writeArtifact(render.RunSpecFile, data)
}

func (f *fixture) writeArtifact(name string, data []byte) {
	f.t.Helper()
	p := filepath.Join(f.project.Artifacts(), filepath.FromSlash(name))
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		f.t.Fatal(err)
	}
	os.Chmod(p, 0o444)
}

// Daemon replies. Every one is optional: a test registers what its checks may ask.

func (f *fixture) daemonUp() *fixture {
	f.fake.On("version", docker.Result{Stdout: []byte(`{"Client":{"Version":"28.2.2","ApiVersion":"1.41"},"Server":{"Version":"20.10.24","ApiVersion":"1.41"}}`)}).Optional()
	return f
}

func (f *fixture) daemonDown() *fixture {
	f.fake.On("version", docker.Result{ExitCode: 1,
		Stderr: []byte("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n")}).Optional()
	return f
}

// built answers image and network inspects as after `abox up`, and lists no running container.
func (f *fixture) built() *fixture {
	rs := f.runSpec()
	f.fake.On("image inspect --format {{json .}} "+rs.Netd.Image, jsonResult(map[string]any{
		"Id": "sha256:" + strings.Repeat("1", 64), "Config": map[string]any{"Labels": map[string]string{BinaryLabel: f.binary}}})).Optional()
	f.fake.On("image inspect --format {{json .}} "+rs.Agent.Image, jsonResult(map[string]any{"Id": "sha256:" + strings.Repeat("2", 64)})).Optional()
	f.fake.On("network inspect --format {{json .}} "+rs.Network, jsonResult(map[string]any{
		"Name": rs.Network, "Driver": "bridge", "IPAM": map[string]any{"Config": []map[string]string{{"Subnet": "172.30.0.0/16", "Gateway": "172.30.0.1"}}}})).Optional()
	f.fake.On("volume inspect --format {{json .}} "+rs.ClaudeVol, jsonResult(map[string]any{"Name": rs.ClaudeVol})).Optional()
	return f
}

// noGateway answers that the profile's gateway does not exist.
func (f *fixture) noGateway() *fixture {
	f.fake.On("container inspect --format {{json .}} "+render.GatewayName("default"), notFound("container")).Optional()
	return f
}

// noSandbox lists no running container of the project.
func (f *fixture) noSandbox() *fixture {
	f.fake.On("ps", docker.Result{}).Optional()
	return f
}

// healthy is a daemon on which `abox up` ran and nothing else.
func (f *fixture) healthy() *fixture { return f.daemonUp().built().noGateway().noSandbox() }

// running lists containers (id → inspect JSON) as the project's running sandbox.
func (f *fixture) running(cs ...map[string]any) *fixture {
	var ps []string
	for _, c := range cs {
		labels := c["Config"].(map[string]any)["Labels"].(map[string]string)
		line, _ := json.Marshal(map[string]string{"ID": c["Id"].(string), "Names": strings.TrimPrefix(c["Name"].(string), "/"),
			"Labels": "abox.hash=" + labels["abox.hash"] + ",abox.role=" + labels["abox.role"], "State": "running"})
		ps = append(ps, string(line))
		f.fake.On("container inspect --format {{json .}} "+c["Id"].(string), jsonResult(c)).Optional()
	}
	f.fake.On("ps", docker.Result{Stdout: []byte(strings.Join(ps, "\n") + "\n")}).Optional()
	return f
}

// liveAgent and liveNetd are inspect documents of a well-formed running sandbox of the fixture.
func (f *fixture) liveNetd() map[string]any {
	return map[string]any{
		"Id": "netd0001", "Name": "/abox-netd-demo-0123abcd", "Image": "sha256:" + strings.Repeat("1", 64),
		"State":  map[string]any{"Running": true, "Status": "running"},
		"Config": map[string]any{"User": "", "Labels": map[string]string{"abox.hash": f.project.Hash, "abox.role": "netd", "abox.run": "0123abcd"}},
		"HostConfig": map[string]any{"CapDrop": []string{"ALL"}, "CapAdd": []string{"CAP_NET_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_DAC_READ_SEARCH"},
			"SecurityOpt": []string{"no-new-privileges"}, "NetworkMode": "abox-net",
			"Sysctls": map[string]string{"net.ipv4.ip_unprivileged_port_start": "1024"}},
	}
}

func (f *fixture) liveAgent() map[string]any {
	return map[string]any{
		"Id": "agent0001", "Name": "/agent-demo-0123abcd", "Image": "sha256:" + strings.Repeat("2", 64),
		"State":      map[string]any{"Running": true, "Status": "running"},
		"Config":     map[string]any{"User": "1000:1000", "Labels": map[string]string{"abox.hash": f.project.Hash, "abox.role": "agent", "abox.run": "0123abcd"}},
		"HostConfig": map[string]any{"CapDrop": []string{"ALL"}, "SecurityOpt": []string{"no-new-privileges"}, "NetworkMode": "container:netd0001"},
		"Mounts":     []map[string]any{{"Type": "bind", "Source": f.ws, "Destination": "/workspace", "RW": true}},
	}
}

func jsonResult(v any) docker.Result {
	b, _ := json.Marshal(v)
	return docker.Result{Stdout: append(b, '\n')}
}

func notFound(kind string) docker.Result {
	return docker.Result{ExitCode: 1, Stderr: []byte("Error: No such " + kind + ": x\n")}
}

// wantStatus fails the test unless f has status s; it prints the finding otherwise.
func wantStatus(t *testing.T, name string, f Finding, s Status) {
	t.Helper()
	if f.Status != s {
		t.Fatalf("%s = %s (%q, hint %q), want %s", name, f.Status, f.Detail, f.Hint, s)
	}
	if (s == Warn || s == Fail) && f.Hint == "" {
		t.Errorf("%s: %s without a hint", name, s)
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

func itoa(n int) string { return strconv.Itoa(n) }
