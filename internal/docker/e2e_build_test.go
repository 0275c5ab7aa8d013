//go:build e2e

package docker_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
)

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
