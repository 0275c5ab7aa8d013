package docker_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func newFake(t *testing.T) (*dockertest.Fake, *docker.Client) {
	f := dockertest.New(t)
	return f, docker.NewClient(f, nil)
}

func TestClientTrace(t *testing.T) {
	f := dockertest.New(t)
	f.On("network create", docker.Result{Stdout: []byte("id\n")})
	var trace bytes.Buffer
	c := docker.NewClient(f, &trace)
	_, err := c.Run(context.Background(), docker.Invocation{
		Args: []string{"network", "create", "--label", "a=b c", "--label", "it's", "abox-net"},
		Env:  []string{"DOCKER_BUILDKIT=0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `+ DOCKER_BUILDKIT=0 docker network create --label 'a=b c' --label 'it'\''s' abox-net` + "\n"
	if got := trace.String(); got != want {
		t.Errorf("trace = %q, want %q", got, want)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"abox-gw-dev", "abox-gw-dev"},
		{"label=abox.managed=true", "label=abox.managed=true"},
		{"{{json .}}", "'{{json .}}'"},
		{"a'b", `'a'\''b'`},
		{"$HOME", "'$HOME'"},
	}
	for _, tc := range tests {
		if got := docker.ShellQuote(tc.in); got != tc.want {
			t.Errorf("ShellQuote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExitErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     string
		stderr   string
		code     int
		wantMsg  string
		wantKind error
	}{
		{"container", "container inspect nope", "Error response from daemon: No such container: nope\n", 1,
			"docker container inspect: exit 1: No such container: nope", docker.ErrNotFound},
		{"network", "network inspect --format {{json .}} nope", "Error response from daemon: network nope not found\n", 1,
			"docker network inspect: exit 1: network nope not found", docker.ErrNotFound},
		{"network rm on CLI 28", "network rm nope", "Error response from daemon: network nope not found\nexit status 1\n", 1,
			"docker network rm: exit 1: network nope not found", docker.ErrNotFound},
		{"volume", "volume inspect nope", "Error response from daemon: get nope: no such volume\n", 1,
			"docker volume inspect: exit 1: get nope: no such volume", docker.ErrNotFound},
		{"image", "image inspect nope:1", "Error response from daemon: no such image: nope:1: No such image: nope:1\n", 1,
			"docker image inspect: exit 1: no such image: nope:1: No such image: nope:1", docker.ErrNotFound},
		{"object", "inspect nope", "Error: No such object: nope\n", 1,
			"docker inspect: exit 1: No such object: nope", docker.ErrNotFound},
		{"cp", "cp c:/nope -", "Error response from daemon: Could not find the file /nope in container c\n", 1,
			"docker cp: exit 1: Could not find the file /nope in container c", docker.ErrNotFound},
		{"daemon", "ps", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n", 1,
			"docker ps: exit 1: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
			docker.ErrDaemonUnreachable},
		{"pull noise", "create --name x img:1", "Unable to find image 'img:1' locally\ndocker: Error response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: no such host\n\nRun 'docker run --help' for more information\n", 125,
			`docker create: exit 125: Get "https://registry-1.docker.io/v2/": dial tcp: no such host`, nil},
		{"exec output is not docker's", "exec c sh", "No such container: pretend\n", 1,
			"docker exec: exit 1: No such container: pretend", nil},
		{"empty stderr", "exec c false", "", 1, "docker exec: exit 1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t)
			f.On("", docker.Result{Stderr: []byte(tc.stderr), ExitCode: tc.code})
			_, err := c.Run(context.Background(), docker.Invocation{Args: strings.Split(tc.args, " ")})
			var ee *docker.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("Run = %v, want *ExitError", err)
			}
			if got := err.Error(); got != tc.wantMsg {
				t.Errorf("Error() = %q, want %q", got, tc.wantMsg)
			}
			if ee.Code != tc.code {
				t.Errorf("Code = %d, want %d", ee.Code, tc.code)
			}
			for _, kind := range []error{docker.ErrNotFound, docker.ErrDaemonUnreachable} {
				if got, want := errors.Is(err, kind), kind == tc.wantKind; got != want {
					t.Errorf("errors.Is(err, %v) = %v, want %v", kind, got, want)
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	f, c := newFake(t)
	f.On("version --format {{json .}}", docker.Result{Stdout: fixture(t, "version.json")})
	got, err := c.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := docker.Version{Client: "28.2.2", ClientAPI: "1.41", Server: "20.10.24+dfsg1", ServerAPI: "1.41"}
	if got != want {
		t.Errorf("Version = %+v, want %+v", got, want)
	}
}

func TestVersionDaemonDown(t *testing.T) {
	f, c := newFake(t)
	f.On("version", docker.Result{
		Stdout:   []byte(`{"Client":{"Version":"28.2.2"},"Server":null}` + "\n"),
		Stderr:   []byte("Cannot connect to the Docker daemon at unix:///x.sock. Is the docker daemon running?\n"),
		ExitCode: 1,
	})
	if _, err := c.Version(context.Background()); !errors.Is(err, docker.ErrDaemonUnreachable) {
		t.Errorf("Version = %v, want ErrDaemonUnreachable", err)
	}
}

// TestRuntimes decodes `docker info`'s runtimes as Docker 20.10 prints them: a runtime without
// arguments has no runtimeArgs key.
func TestRuntimes(t *testing.T) {
	f, c := newFake(t)
	f.On("info --format {{json .Runtimes}}", docker.Result{Stdout: fixture(t, "info-runtimes.json")})
	got, err := c.Runtimes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]docker.Runtime{
		"io.containerd.runc.v2": {Path: "runc"}, "io.containerd.runtime.v1.linux": {Path: "runc"}, "runc": {Path: "runc"},
		"runsc": {Path: "/usr/bin/runsc", Args: []string{"--network=host"}}, "runsc-netstack": {Path: "/usr/bin/runsc"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Runtimes mismatch (-want +got):\n%s", diff)
	}
}

func TestRuntimesDaemonDown(t *testing.T) {
	f, c := newFake(t)
	f.On("info", docker.Result{
		Stderr:   []byte("Cannot connect to the Docker daemon at unix:///x.sock. Is the docker daemon running?\n"),
		ExitCode: 1,
	})
	if _, err := c.Runtimes(context.Background()); !errors.Is(err, docker.ErrDaemonUnreachable) {
		t.Errorf("Runtimes = %v, want ErrDaemonUnreachable", err)
	}
}

// TestArgv checks the argv each helper builds: the argv is abox's audited artifact.
func TestArgv(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func(c *docker.Client) error
		want []string
	}{
		{"network create", func(c *docker.Client) error {
			_, err := c.NetworkCreate(ctx, "abox-net", map[string]string{"abox.role": "net", "abox.managed": "true"})
			return err
		}, []string{"network", "create", "--driver", "bridge", "--label", "abox.managed=true", "--label", "abox.role=net", "abox-net"}},
		{"network connect", func(c *docker.Client) error {
			return c.NetworkConnect(ctx, "abox-net", "netd", "mcp", "dns")
		}, []string{"network", "connect", "--alias", "mcp", "--alias", "dns", "abox-net", "netd"}},
		{"network rm", func(c *docker.Client) error { return c.NetworkRemove(ctx, "abox-net") },
			[]string{"network", "rm", "abox-net"}},
		{"volume create", func(c *docker.Client) error {
			return c.VolumeCreate(ctx, "abox-claude-1", map[string]string{"abox.managed": "true"})
		}, []string{"volume", "create", "--driver", "local", "--label", "abox.managed=true", "abox-claude-1"}},
		{"volume rm", func(c *docker.Client) error { return c.VolumeRemove(ctx, "v") }, []string{"volume", "rm", "v"}},
		{"pull", func(c *docker.Client) error { return c.Pull(ctx, "img@sha256:ab") }, []string{"pull", "--quiet", "img@sha256:ab"}},
		{"image rm", func(c *docker.Client) error { return c.ImageRemove(ctx, true, "a", "b") },
			[]string{"image", "rm", "--force", "a", "b"}},
		{"create", func(c *docker.Client) error {
			_, err := c.Create(ctx, []string{"create", "--name", "agent", "--cap-drop", "ALL", "img"})
			return err
		}, []string{"create", "--name", "agent", "--cap-drop", "ALL", "img"}},
		{"run detached", func(c *docker.Client) error {
			_, err := c.RunDetached(ctx, []string{"run", "--rm", "img", "sleep", "1"})
			return err
		}, []string{"run", "--detach", "--rm", "img", "sleep", "1"}},
		{"run already detached", func(c *docker.Client) error {
			_, err := c.RunDetached(ctx, []string{"run", "-d", "img"})
			return err
		}, []string{"run", "-d", "img"}},
		{"start", func(c *docker.Client) error { return c.Start(ctx, "netd") }, []string{"start", "netd"}},
		{"stop rounds up", func(c *docker.Client) error { return c.Stop(ctx, "netd", 1500*time.Millisecond) },
			[]string{"stop", "-t", "2", "netd"}},
		{"kill", func(c *docker.Client) error { return c.Kill(ctx, "netd", "HUP") }, []string{"kill", "--signal", "HUP", "netd"}},
		{"rm", func(c *docker.Client) error { return c.Remove(ctx, true, true, "a", "b") },
			[]string{"rm", "--force", "--volumes", "a", "b"}},
		{"exec", func(c *docker.Client) error {
			_, err := c.Exec(ctx, "netd", "root", []string{"nft", "-j", "list", "ruleset"}, nil)
			return err
		}, []string{"exec", "--user", "root", "netd", "nft", "-j", "list", "ruleset"}},
		{"logs", func(c *docker.Client) error { return c.Logs(ctx, "agent", &bytes.Buffer{}) }, []string{"logs", "agent"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t)
			f.On(strings.Join(tc.want, " "), docker.Result{Stdout: []byte("0123abcd\n")})
			if err := tc.call(c); err != nil {
				t.Fatalf("call: %v", err)
			}
			if diff := cmp.Diff([][]string{tc.want}, argvs(f)); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
		})
	}
}

func argvs(f *dockertest.Fake) [][]string {
	var out [][]string
	for _, c := range f.Calls() {
		out = append(out, c.Args)
	}
	return out
}

func TestCreateReturnsID(t *testing.T) {
	f, c := newFake(t)
	f.On("create", docker.Result{Stdout: []byte("0123abcd\n")})
	id, err := c.Create(context.Background(), []string{"create", "img"})
	if err != nil || id != "0123abcd" {
		t.Errorf("Create = %q, %v, want 0123abcd", id, err)
	}
	if _, err := c.Create(context.Background(), []string{"run", "img"}); err == nil {
		t.Errorf("Create(run …) succeeded, want an error")
	}
}

func TestRemoveIgnoresNotFound(t *testing.T) {
	tests := []struct {
		name    string
		stderr  string
		wantErr bool
	}{
		{"all missing", "Error response from daemon: No such container: a\nError response from daemon: No such container: b\n", false},
		{"one in use", "Error response from daemon: No such container: a\nError response from daemon: You cannot remove a running container x\n", true},
		{"daemon down", "Cannot connect to the Docker daemon at unix:///x. Is the docker daemon running?\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t)
			f.On("rm", docker.Result{Stderr: []byte(tc.stderr), ExitCode: 1})
			err := c.Remove(context.Background(), false, false, "a", "b")
			if (err != nil) != tc.wantErr {
				t.Errorf("Remove = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// TestRemoveWaitsForRemovalInProgress: a container another process is removing at the same
// moment (the after-run process and `abox nuke`) is not a failure: Remove waits until it is
// gone. Another error beside it still is one, and one that stays is one once ctx ends.
func TestRemoveWaitsForRemovalInProgress(t *testing.T) {
	const inProgress = "Error response from daemon: removal of container c1 is already in progress\n"
	f, c := newFake(t)
	f.On("rm", docker.Result{Stderr: []byte(inProgress + "Error response from daemon: No such container: c2\n"), ExitCode: 1}).Once()
	f.On("container inspect", docker.Result{Stdout: []byte(`{"Id":"c1"}`)}).Once()
	f.On("container inspect", docker.Result{Stderr: []byte("Error: No such object: c1\n"), ExitCode: 1}).Once()
	if err := c.Remove(context.Background(), true, true, "c1", "c2"); err != nil {
		t.Errorf("Remove while another removal is in progress = %v, want it to wait for it", err)
	}
	f, c = newFake(t)
	f.On("rm", docker.Result{Stderr: []byte(inProgress + "Error response from daemon: You cannot remove a running container c2\n"), ExitCode: 1})
	if err := c.Remove(context.Background(), true, true, "c1", "c2"); err == nil {
		t.Error("Remove with another error beside the removal in progress = nil")
	}
	f, c = newFake(t)
	f.On("rm", docker.Result{Stderr: []byte(inProgress), ExitCode: 1})
	f.On("container inspect", docker.Result{Stdout: []byte(`{"Id":"c1"}`)})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := c.Remove(ctx, true, true, "c1"); err == nil || !strings.Contains(err.Error(), "still there") {
		t.Errorf("Remove of a container that stays = %v, want an error once ctx ends", err)
	}
}

func TestExecExitCode(t *testing.T) {
	f, c := newFake(t)
	f.On("exec", docker.Result{Stdout: []byte("partial\n"), ExitCode: 4})
	res, err := c.Exec(context.Background(), "netd", "", []string{"self-test"}, nil)
	var ee *docker.ExitError
	if !errors.As(err, &ee) || ee.Code != 4 {
		t.Fatalf("Exec = %v, want ExitError with code 4", err)
	}
	if string(res.Stdout) != "partial\n" {
		t.Errorf("Stdout = %q, want the output despite the failure", res.Stdout)
	}
}

func TestFollowLogsStreamsUntilCanceled(t *testing.T) {
	f, c := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	f.OnFunc("logs --follow agent", func(inv docker.Invocation) (docker.Result, error) {
		_, _ = inv.Stdout.Write([]byte("line 1\n"))
		cancel()
		return docker.Result{ExitCode: 143}, context.Canceled
	})
	var w bytes.Buffer
	if err := c.FollowLogs(ctx, "agent", &w); err != nil {
		t.Errorf("FollowLogs = %v, want nil after ctx ends", err)
	}
	if w.String() != "line 1\n" {
		t.Errorf("streamed %q, want %q", w.String(), "line 1\n")
	}
}

// TestExecRunnerWithFakeBinary runs the whole path through a process: Client → ExecRunner →
// the FakeBinary executable answering from a replies file.
func TestExecRunnerWithFakeBinary(t *testing.T) {
	dir := t.TempDir()
	replies := filepath.Join(dir, "replies")
	logPath := filepath.Join(dir, "docker.log")
	err := os.WriteFile(replies, []byte("> network inspect --format {{json .}} abox-net\nstdout-file: net.json\n"+
		"> network inspect\nstderr: Error response from daemon: network other not found\nexit 1\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "net.json"), fixture(t, "network-inspect.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	c := docker.NewClient(envRunner{&docker.ExecRunner{Binary: exe}, []string{
		helperEnv + "=fake", dockertest.RepliesEnv + "=" + replies, dockertest.LogEnv + "=" + logPath,
	}}, nil)
	n, err := c.NetworkInspect(context.Background(), "abox-net")
	if err != nil || n.Name != "probe-net" {
		t.Errorf("NetworkInspect = %+v, %v, want probe-net", n, err)
	}
	if _, err := c.NetworkInspect(context.Background(), "other"); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("NetworkInspect(other) = %v, want ErrNotFound", err)
	}
	calls, err := dockertest.ReadLog(logPath)
	if err != nil || len(calls) != 2 {
		t.Fatalf("ReadLog = %d calls, %v, want 2", len(calls), err)
	}
}

// envRunner adds environment entries to every invocation.
type envRunner struct {
	r   docker.Runner
	env []string
}

func (e envRunner) Run(ctx context.Context, inv docker.Invocation) (docker.Result, error) {
	inv.Env = append(append([]string(nil), inv.Env...), e.env...)
	return e.r.Run(ctx, inv)
}

// TestEnsureNetwork: an existing network is left alone; a missing one is created with the
// labels; any other inspect error stops it before a create.
func TestEnsureNetwork(t *testing.T) {
	ctx := context.Background()
	labels := map[string]string{"abox.managed": "true"}
	creates := func(f *dockertest.Fake) int {
		n := 0
		for _, c := range f.Calls() {
			if len(c.Args) > 1 && c.Args[0] == "network" && c.Args[1] == "create" {
				n++
			}
		}
		return n
	}

	f, c := newFake(t)
	f.On("network inspect", docker.Result{Stdout: []byte(`{"Name":"abox-net","Id":"n1","Driver":"bridge"}`)})
	if err := c.EnsureNetwork(ctx, "abox-net", labels); err != nil || creates(f) != 0 {
		t.Errorf("existing network: %v, %d creates; want nil, 0", err, creates(f))
	}

	f, c = newFake(t)
	f.On("network inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error response from daemon: network abox-net not found\n")})
	f.On("network create --driver bridge --label abox.managed=true abox-net", docker.Result{Stdout: []byte("0123abcd\n")})
	if err := c.EnsureNetwork(ctx, "abox-net", labels); err != nil || creates(f) != 1 {
		t.Errorf("missing network: %v, %d creates; want nil, 1", err, creates(f))
	}

	f, c = newFake(t)
	f.On("network inspect", docker.Result{ExitCode: 1, Stderr: []byte("permission denied while trying to connect to the Docker daemon socket\n")})
	if err := c.EnsureNetwork(ctx, "abox-net", labels); err == nil || creates(f) != 0 {
		t.Errorf("inspect failure: %v, %d creates; want an error, 0", err, creates(f))
	}
}

func TestOperatingSystemAndMCPOAuth(t *testing.T) {
	f, c := newFake(t)
	f.On("info --format {{.OperatingSystem}}", docker.Result{Stdout: []byte("Docker Desktop\n")})
	f.On("mcp oauth ls", docker.Result{})
	f.On("mcp oauth authorize github", docker.Result{})
	ctx := context.Background()
	if os, err := c.OperatingSystem(ctx); err != nil || os != "Docker Desktop" {
		t.Errorf("OperatingSystem = %q, %v", os, err)
	}
	var out, errw bytes.Buffer
	if err := c.MCPOAuth(ctx, "", false, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if err := c.MCPOAuth(ctx, "github", true, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if calls := f.Calls(); len(calls) != 3 || !calls[2].TTY || calls[1].TTY {
		t.Errorf("calls = %+v, want the authorize on a terminal only", calls)
	}
}
