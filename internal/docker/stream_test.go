package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
)

// The build-*.stdout and build-*.stderr fixtures are the output of CLI 28.2.2's legacy builder
// (DOCKER_BUILDKIT=0) against Docker Engine 20.10.24.

func TestBuild(t *testing.T) {
	f, c := newFake(t)
	f.On("build --force-rm --tag probe-build:1 --label abox.test=docker-pkg ctx", docker.Result{
		Stdout: fixture(t, "build-ok.stdout"), Stderr: fixture(t, "build-ok.stderr"),
	})
	var progress, log bytes.Buffer
	err := c.Build(context.Background(), docker.BuildOptions{
		Tag: "probe-build:1", ContextDir: "ctx", Labels: map[string]string{"abox.test": "docker-pkg"},
		Progress: &progress, Log: &log,
	})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	call := f.Calls()[0]
	if !slices.Contains(call.Env, "DOCKER_BUILDKIT=0") {
		t.Errorf("Env = %q, want DOCKER_BUILDKIT=0", call.Env)
	}
	for _, want := range []string{"step 1/5 · FROM abox-test-base:bookworm · ", "step 5/5 · LABEL abox.test=docker-pkg · "} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress %q does not contain %q", progress.String(), want)
		}
	}
	if !strings.HasSuffix(progress.String(), "\n") {
		t.Errorf("progress %q does not end the line", progress.String())
	}
	if !strings.Contains(log.String(), "Successfully tagged probe-build:1") {
		t.Errorf("log lacks the build output: %q", log.String())
	}
}

func TestBuildFailure(t *testing.T) {
	f, c := newFake(t)
	f.On("build", docker.Result{
		Stdout: fixture(t, "build-fail.stdout"), Stderr: fixture(t, "build-fail.stderr"), ExitCode: 3,
	})
	err := c.Build(context.Background(), docker.BuildOptions{Tag: "t:1", ContextDir: "ctx"})
	var ee *docker.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Build = %v, want *ExitError", err)
	}
	if want := "docker build: exit 3: The command '/bin/sh -c exit 3' returned a non-zero code: 3"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if !strings.Contains(string(ee.Log), "Step 2/2 : RUN exit 3") {
		t.Errorf("Log tail = %q, want the failing step", ee.Log)
	}
}

func TestBuildNeedsTagAndContext(t *testing.T) {
	_, c := newFake(t)
	if err := c.Build(context.Background(), docker.BuildOptions{Tag: "t"}); err == nil {
		t.Errorf("Build without a context succeeded")
	}
}

func TestCopyFrom(t *testing.T) {
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for _, h := range []*tar.Header{
		{Name: "out/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "out/t.jsonl", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3},
		{Name: "out/evil", Typeflag: tar.TypeSymlink, Linkname: "/root/.ssh/id_ed25519"},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write([]byte("{}\n"))
		}
	}
	_ = tw.Close()
	archive.Write(make([]byte, 10240)) // docker pads the stream past the end-of-archive marker

	f, c := newFake(t)
	f.On("cp agent:/home/agent/out -", docker.Result{Stdout: archive.Bytes()})
	dest := filepath.Join(t.TempDir(), "harvest")
	if err := c.CopyFrom(context.Background(), "agent", "/home/agent/out", dest); err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(dest, "out", "t.jsonl")); err != nil || string(data) != "{}\n" {
		t.Errorf("out/t.jsonl = %q, %v", data, err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "out", "evil")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("symlink out/evil was created (Lstat: %v)", err)
	}
}

func TestCopyFromErrors(t *testing.T) {
	f, c := newFake(t)
	f.On("cp agent:/nope -", docker.Result{
		Stderr: []byte("Error response from daemon: Could not find the file /nope in container agent\n"), ExitCode: 1})
	f.On("cp agent:/bad -", docker.Result{Stdout: []byte(strings.Repeat("garbage!", 200))})
	if err := c.CopyFrom(context.Background(), "agent", "/nope", t.TempDir()); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("CopyFrom(missing) = %v, want ErrNotFound", err)
	}
	if err := c.CopyFrom(context.Background(), "agent", "/bad", t.TempDir()); err == nil {
		t.Errorf("CopyFrom(garbage) succeeded, want an error")
	}
}
