//go:build e2e

package docker_test

// These tests drive the real docker CLI against a real daemon:
//
//	go test -tags e2e -run E2E -v ./internal/docker/
//
// They use only a local image (ABOX_E2E_BASE_IMAGE, default abox-test-base:bookworm; see
// docs/reference/docker-here.md for how CI imports it) and never pull. Everything they create
// carries the labels abox.test=docker-pkg and abox.test.run=<run id>, and is removed at the end.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
)

// e2eEnv is one test's view of the daemon.
type e2eEnv struct {
	t      *testing.T
	c      *docker.Client
	image  string
	run    string            // unique per test, in names and labels
	labels map[string]string // put on everything the test creates
}

// newE2E skips unless a daemon answers and the base image is present.
func newE2E(t *testing.T) *e2eEnv {
	t.Helper()
	image := os.Getenv("ABOX_E2E_BASE_IMAGE")
	if image == "" {
		image = "abox-test-base:bookworm"
	}
	c := docker.NewClient(&docker.ExecRunner{}, traceTo(t))
	ctx := context.Background()
	if _, err := c.Version(ctx); err != nil {
		t.Skipf("no docker daemon: %v", err)
	}
	if ok, err := c.ImageExists(ctx, image); err != nil || !ok {
		t.Skipf("base image %s not present locally (%v); tests never pull", image, err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e := &e2eEnv{t: t, c: c, image: image, run: "abox-dockerpkg-" + hex.EncodeToString(b)}
	e.labels = map[string]string{"abox.test": "docker-pkg", "abox.test.run": e.run}
	t.Cleanup(e.cleanup)
	return e
}

// traceTo logs every argv the client runs, so that -v shows the audited commands.
func traceTo(t *testing.T) *bytes.Buffer {
	var b bytes.Buffer
	t.Cleanup(func() { t.Logf("docker commands run:\n%s", b.String()) })
	return &b
}

func (e *e2eEnv) name(s string) string { return e.run + "-" + s }

// labelFlags returns the --label flags for e.labels.
func (e *e2eEnv) labelFlags() []string {
	return []string{"--label", "abox.test=docker-pkg", "--label", "abox.test.run=" + e.run}
}

// cleanup removes every container, network, volume and image labelled with this run.
func (e *e2eEnv) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := e.c.ContainersByLabel(ctx, map[string]string{"abox.test.run": e.run}, true)
	if err != nil {
		e.t.Errorf("cleanup: listing containers: %v", err)
	}
	for _, ct := range list {
		if err := e.c.Remove(ctx, true, true, ct.ID); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	for _, kind := range []string{"network", "volume", "image"} {
		e.removeLabelled(ctx, kind)
	}
}

// removeLabelled removes the networks, volumes or images (kind) labelled with this run,
// including intermediate images left by a failed build.
func (e *e2eEnv) removeLabelled(ctx context.Context, kind string) {
	ls := []string{kind, "ls", "--quiet", "--filter", "label=abox.test.run=" + e.run}
	rm := []string{kind, "rm"}
	if kind == "image" {
		ls = append(ls, "--all")
		rm = append(rm, "--force")
	}
	out, err := e.c.Run(ctx, docker.Invocation{Args: ls})
	if err != nil {
		e.t.Errorf("cleanup: listing %ss: %v", kind, err)
	}
	ids := strings.Fields(string(out.Stdout))
	if len(ids) == 0 {
		return
	}
	if _, err := e.c.Run(ctx, docker.Invocation{Args: append(rm, ids...)}); err != nil {
		e.t.Errorf("cleanup: %v", err)
	}
}

// startSleeper creates and starts a container running cmd (default: sleep) with --init.
func (e *e2eEnv) startSleeper(ctx context.Context, name string, cmd ...string) string {
	e.t.Helper()
	if len(cmd) == 0 {
		cmd = []string{"sleep", "300"}
	}
	argv := append([]string{"create", "--pull", "never", "--init", "--name", name}, e.labelFlags()...)
	argv = append(append(argv, e.image), cmd...)
	id, err := e.c.Create(ctx, argv)
	if err != nil {
		e.t.Fatalf("Create: %v", err)
	}
	if err := e.c.Start(ctx, name); err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	return id
}

func TestE2EVersion(t *testing.T) {
	e := newE2E(t)
	v, err := e.c.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("docker version: %+v", v)
	if v.Server == "" || v.ServerAPI == "" || v.ClientAPI == "" {
		t.Errorf("Version = %+v, want every field", v)
	}
}

func TestE2ENetwork(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	name := e.name("net")
	id, err := e.c.NetworkCreate(ctx, name, e.labels)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.c.NetworkInspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if n.ID != id || n.Driver != "bridge" || n.Internal || n.EnableIPv6 || n.Labels["abox.test.run"] != e.run {
		t.Errorf("NetworkInspect = %+v, want a labelled bridge %s without --internal or IPv6", n, id)
	}
	if _, err := e.c.NetworkCreate(ctx, name, e.labels); err == nil || errors.Is(err, docker.ErrNotFound) {
		t.Errorf("NetworkCreate(existing) = %v, want a plain error", err)
	} else {
		t.Logf("NetworkCreate(existing): %v", err)
	}
	if err := e.c.NetworkRemove(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.NetworkInspect(ctx, name); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("NetworkInspect(removed) = %v, want ErrNotFound", err)
	}
	if err := e.c.NetworkRemove(ctx, name); err != nil {
		t.Errorf("NetworkRemove(removed) = %v, want nil", err)
	}
}

func TestE2EVolume(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	name := e.name("vol")
	if err := e.c.VolumeCreate(ctx, name, e.labels); err != nil {
		t.Fatal(err)
	}
	v, err := e.c.VolumeInspect(ctx, name)
	if err != nil || v.Name != name || v.Driver != "local" || v.Labels["abox.test.run"] != e.run {
		t.Errorf("VolumeInspect = %+v, %v", v, err)
	}
	if err := e.c.VolumeRemove(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := e.c.VolumeRemove(ctx, name); err != nil {
		t.Errorf("VolumeRemove(removed) = %v, want nil", err)
	}
	if _, err := e.c.VolumeInspect(ctx, name); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("VolumeInspect(removed) = %v, want ErrNotFound", err)
	}
}

func TestE2ENotFound(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	missing := e.name("missing")
	checks := map[string]error{}
	_, checks["container inspect"] = e.c.ContainerInspect(ctx, missing)
	_, checks["image inspect"] = e.c.ImageInspect(ctx, missing+":1")
	_, checks["network inspect"] = e.c.NetworkInspect(ctx, missing)
	_, checks["volume inspect"] = e.c.VolumeInspect(ctx, missing)
	checks["start"] = e.c.Start(ctx, missing)
	checks["kill"] = e.c.Kill(ctx, missing, "TERM")
	_, checks["exec"] = e.c.Exec(ctx, missing, "", []string{"true"}, nil)
	_, checks["create --pull never"] = e.c.Create(ctx, []string{"create", "--pull", "never", missing + ":1"})
	for what, err := range checks {
		if !errors.Is(err, docker.ErrNotFound) {
			t.Errorf("%s of a missing object = %v, want ErrNotFound", what, err)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	if ok, err := e.c.ImageExists(ctx, missing+":1"); ok || err != nil {
		t.Errorf("ImageExists(missing) = %v, %v, want false, nil", ok, err)
	}
	if err := e.c.Remove(ctx, false, false, missing); err != nil {
		t.Errorf("Remove(missing) = %v, want nil", err)
	}
	if err := e.c.ImageRemove(ctx, false, missing+":1"); err != nil {
		t.Errorf("ImageRemove(missing) = %v, want nil", err)
	}
}

func TestE2EDaemonUnreachable(t *testing.T) {
	newE2E(t) // only where docker is installed
	c := docker.NewClient(envRunner{&docker.ExecRunner{}, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}}, nil)
	_, err := c.Version(context.Background())
	if !errors.Is(err, docker.ErrDaemonUnreachable) {
		t.Errorf("Version with no daemon = %v, want ErrDaemonUnreachable", err)
	}
	t.Logf("unreachable: %v", err)
}

func TestE2EContainerLifecycle(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	name := e.name("box")
	id := e.startSleeper(ctx, name, "sh", "-c", "echo to-stdout; echo to-stderr >&2; exec sleep 300")

	ct, err := e.c.ContainerInspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if ct.ID != id || !ct.State.Running || ct.State.Pid == 0 || ct.Config.Labels["abox.test.run"] != e.run {
		t.Errorf("ContainerInspect = %+v, want running %s", ct, id)
	}
	list, err := e.c.ContainersByLabel(ctx, map[string]string{"abox.test.run": e.run}, false)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Names[0] != name || list[0].State != "running" {
		t.Errorf("ContainersByLabel = %+v, %v, want the one running container", list, err)
	}

	res, err := e.c.Exec(ctx, name, "1000", []string{"sh", "-c", "id -u; cat"}, strings.NewReader("via-stdin"))
	if err != nil || string(res.Stdout) != "1000\nvia-stdin" {
		t.Errorf("Exec = %q, %v, want uid 1000 and the stdin", res.Stdout, err)
	}
	_, err = e.c.Exec(ctx, name, "", []string{"sh", "-c", "exit 3"}, nil)
	var ee *docker.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("Exec(exit 3) = %v, want ExitError code 3", err)
	}

	var logs bytes.Buffer
	if err := e.c.Logs(ctx, name, &logs); err != nil || !strings.Contains(logs.String(), "to-stdout") ||
		!strings.Contains(logs.String(), "to-stderr") {
		t.Errorf("Logs = %q, %v, want both streams", logs.String(), err)
	}

	testCopyFrom(t, e, name)

	netName := e.name("net")
	if _, err := e.c.NetworkCreate(ctx, netName, e.labels); err != nil {
		t.Fatal(err)
	}
	if err := e.c.NetworkConnect(ctx, netName, name, "alias-a"); err != nil {
		t.Fatal(err)
	}
	ct, _ = e.c.ContainerInspect(ctx, name)
	if aliases := ct.NetworkSettings.Networks[netName].Aliases; !contains(aliases, "alias-a") {
		t.Errorf("aliases on %s = %q, want alias-a", netName, aliases)
	}

	start := time.Now()
	if err := e.c.Stop(ctx, name, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ct, _ = e.c.ContainerInspect(ctx, name)
	t.Logf("stopped with --init in %v: status %s, exit %d", time.Since(start), ct.State.Status, ct.State.ExitCode)
	if ct.State.Running {
		t.Errorf("still running after Stop")
	}
	if err := e.c.Remove(ctx, true, true, name); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ContainerInspect(ctx, name); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("ContainerInspect(removed) = %v, want ErrNotFound", err)
	}
	if err := e.c.NetworkRemove(ctx, netName); err != nil {
		t.Error(err)
	}
}

// testCopyFrom plants a tree with a symlink to a host secret and a FIFO, and checks that only the
// regular files and directories come out.
func testCopyFrom(t *testing.T, e *e2eEnv, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := e.c.Exec(ctx, name, "", []string{"sh", "-c",
		"mkdir -p /out/sub && echo hi > /out/a.txt && echo x > /out/sub/b && " +
			"ln -s /etc/shadow /out/link && ln -s ../../../../../../tmp /out/up && mkfifo /out/fifo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	if err := e.c.CopyFrom(ctx, name, "/out", dest); err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	var got []string
	_ = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dest, p)
		if rel == "." {
			return err
		}
		info, _ := d.Info()
		got = append(got, rel+" "+info.Mode().String())
		return err
	})
	want := "out drwx------,out/a.txt -rw-------,out/sub drwx------,out/sub/b -rw-------"
	if strings.Join(got, ",") != want {
		t.Errorf("extracted %q, want %q", strings.Join(got, ","), want)
	}
	if err := e.c.CopyFrom(ctx, name, "/nope", dest); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("CopyFrom(missing) = %v, want ErrNotFound", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestE2EFollowLogs(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	argv := append([]string{"run", "--pull", "never", "--init", "--name", e.name("logs")}, e.labelFlags()...)
	argv = append(argv, e.image, "sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.3; done")
	if _, err := e.c.RunDetached(ctx, argv); err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.c.FollowLogs(tctx, e.name("logs"), &w); err != nil || tctx.Err() != nil {
		t.Fatalf("FollowLogs = %v (ctx %v), want it to end with the container", err, tctx.Err())
	}
	if w.String() != "line 1\nline 2\nline 3\n" {
		t.Errorf("followed %q", w.String())
	}

	e.startSleeper(ctx, e.name("forever"))
	short, cancel2 := context.WithTimeout(ctx, time.Second)
	defer cancel2()
	start := time.Now()
	if err := e.c.FollowLogs(short, e.name("forever"), &w); err != nil {
		t.Errorf("FollowLogs after ctx ended = %v, want nil", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("FollowLogs took %v to notice the end of ctx", d)
	}
}

func TestE2EBuild(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	dir := t.TempDir()
	dockerfile := "FROM " + e.image + "\nLABEL abox.test.run=" + e.run + "\nRUN echo built && echo to-stderr >&2\nCMD [\"true\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o600); err != nil {
		t.Fatal(err)
	}
	tag := e.run + ":ok"
	t.Cleanup(func() { _ = e.c.ImageRemove(context.Background(), true, tag) })
	var progress, log bytes.Buffer
	err := e.c.Build(ctx, docker.BuildOptions{Tag: tag, ContextDir: dir, NoCache: true, Labels: e.labels,
		BuildArgs: map[string]string{"UNUSED": "1"}, Progress: &progress, Log: &log})
	if err != nil {
		t.Fatalf("Build: %v\nlog:\n%s", err, log.String())
	}
	t.Logf("progress output: %q", progress.String())
	// The legacy builder turns each --label into a step of its own: 4 instructions + 2 labels.
	for _, want := range []string{"step 1/6 · FROM " + e.image, "step 3/6 · RUN echo built && echo to-stderr >&2",
		"step 6/6 · LABEL abox.test.run="} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress %q lacks %q", progress.String(), want)
		}
	}
	img, err := e.c.ImageInspect(ctx, tag)
	if err != nil || img.Labels["abox.test.run"] != e.run || !contains(img.RepoTags, tag) {
		t.Errorf("ImageInspect = %+v, %v", img, err)
	}
	testBuildFailure(t, e, dir)
}

// testBuildFailure checks the failed build's error and that --force-rm left no container.
func testBuildFailure(t *testing.T, e *e2eEnv, dir string) {
	t.Helper()
	ctx := context.Background()
	bad := "FROM " + e.image + "\nLABEL abox.test.run=" + e.run + "\nRUN echo before-failing; exit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile.bad"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	tag := e.run + ":bad"
	t.Cleanup(func() { _ = e.c.ImageRemove(context.Background(), true, tag) })
	err := e.c.Build(ctx, docker.BuildOptions{Tag: tag, ContextDir: dir, Dockerfile: filepath.Join(dir, "Dockerfile.bad")})
	var ee *docker.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("Build(failing) = %v, want ExitError with the step's code 3", err)
	}
	t.Logf("failed build: %v\nlog tail:\n%s", err, ee.Log)
	if !strings.Contains(err.Error(), "returned a non-zero code: 3") || !strings.Contains(string(ee.Log), "before-failing") {
		t.Errorf("error %q / log %q lack the failure", err, ee.Log)
	}
	left, err := e.c.ContainersByLabel(ctx, map[string]string{"abox.test.run": e.run}, true)
	if err != nil || len(left) != 0 {
		t.Errorf("containers left by the failed build: %+v, %v", left, err)
	}
}

// TestE2ECancelKillsRun cancels an attached `docker run` and checks that the CLI is gone
// promptly. Without --init, sleep as PID 1 ignores the SIGTERM that `docker run` forwards, so
// the CLI needs the SIGKILL after the grace period and the container keeps running; with --init
// the container exits at once and --rm removes it.
func TestE2ECancelKillsRun(t *testing.T) {
	e := newE2E(t)
	for _, tc := range []struct {
		name        string
		init        bool
		wantRunning bool
	}{{"no-init", false, true}, {"init", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			name := e.name("cancel-" + tc.name)
			argv := append([]string{"run", "--pull", "never", "--rm", "--name", name}, e.labelFlags()...)
			if tc.init {
				argv = append(argv, "--init")
			}
			argv = append(argv, e.image, "sleep", "100")
			ctx, cancel := context.WithCancel(context.Background())
			go cancelWhenRunning(e, name, cancel)
			start := time.Now()
			res, err := e.c.Run(ctx, docker.Invocation{Args: argv})
			elapsed := time.Since(start)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want context.Canceled", err)
			}
			t.Logf("canceled docker run returned after %v with exit code %d", elapsed, res.ExitCode)
			if elapsed > 30*time.Second {
				t.Errorf("Run took %v", elapsed)
			}
			time.Sleep(time.Second) // let --rm finish
			ct, err := e.c.ContainerInspect(context.Background(), name)
			running := err == nil && ct.State.Running
			if running != tc.wantRunning {
				t.Errorf("container running after cancel = %v, want %v (inspect: %v)", running, tc.wantRunning, err)
			}
		})
	}
}

// cancelWhenRunning calls cancel once the named container runs.
func cancelWhenRunning(e *e2eEnv, name string, cancel context.CancelFunc) {
	defer cancel()
	quiet := docker.NewClient(&docker.ExecRunner{}, nil)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if ct, err := quiet.ContainerInspect(context.Background(), name); err == nil && ct.State.Running {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
