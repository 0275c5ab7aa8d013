package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

func TestRemoveContainers(t *testing.T) {
	fake := dockertest.New(t)
	fake.On("ps --no-trunc --format {{json .}} --all --filter label=abox.hash=h1 --filter label=abox.managed=true",
		docker.Result{Stdout: []byte(`{"ID":"c1","Names":"a"}` + "\n" + `{"ID":"c2","Names":"b"}` + "\n")})
	fake.On("rm --force --volumes c1 c2", docker.Result{})
	n, err := RemoveContainers(context.Background(), docker.NewClient(fake, nil), "h1")
	if err != nil || n != 2 {
		t.Fatalf("RemoveContainers = %d, %v", n, err)
	}
}

// TestRemoveState: the artifacts, build files, masks (read-only directories included), the
// approval and the retire list (its containers went with the others) go, the review copy's generated files too, but a file the user added to the review
// directory, the run history and the manifest stay.
func TestRemoveState(t *testing.T) {
	ws := t.TempDir()
	proj := paths.Project{Workspace: ws, Dir: t.TempDir()}
	for _, d := range []string{proj.Artifacts(), proj.Build(), filepath.Join(proj.Masks(), "empty.d"), proj.Runs()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(proj.Artifacts(), "runspec.json"), []byte("{}"), 0o600)
	os.Chmod(filepath.Join(proj.Masks(), "empty.d"), 0o500)
	os.WriteFile(proj.Approved(), []byte("version: 1\n"), 0o600)
	os.WriteFile(filepath.Join(proj.Dir, retiredFile), []byte("abox-netd-p-1\n"), 0o600)
	review := filepath.Join(ws, render.ReviewDir)
	os.Mkdir(review, 0o755)
	os.WriteFile(filepath.Join(review, render.ComposeFile), nil, 0o644)
	os.WriteFile(filepath.Join(review, "mine.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(ws, "agentbox.yaml"), []byte("version: 1\n"), 0o644)
	if err := RemoveState(proj); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{proj.Artifacts(), proj.Build(), proj.Masks(), proj.Approved(), filepath.Join(proj.Dir, retiredFile), filepath.Join(review, render.ComposeFile)} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", gone, err)
		}
	}
	for _, kept := range []string{proj.Runs(), filepath.Join(review, "mine.txt"), filepath.Join(ws, "agentbox.yaml")} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
		}
	}
}

// TestRemoveCaches: every cache volume of this project goes, found by its name (the project's
// hash), not by the manifest's list, which the agent can edit; another project's stay, and the
// first that cannot be removed stops it with its error.
func TestRemoveCaches(t *testing.T) {
	fake := dockertest.New(t)
	fake.On("volume ls --quiet --filter name=abox-cache-h1-", docker.Result{Stdout: []byte("abox-cache-h1-npm\nabox-cache-h1-go\nx-abox-cache-h1-npm\n")})
	fake.On("volume rm abox-cache-h1-npm", docker.Result{})
	fake.On("volume rm abox-cache-h1-go", docker.Result{Stderr: []byte("volume is in use"), ExitCode: 1}).Once()
	if err := RemoveCaches(context.Background(), docker.NewClient(fake, nil), "h1"); err == nil {
		t.Fatal("RemoveCaches of a volume in use = nil")
	}
	fake.On("volume rm abox-cache-h1-go", docker.Result{})
	if err := RemoveCaches(context.Background(), docker.NewClient(fake, nil), "h1"); err != nil {
		t.Errorf("RemoveCaches = %v", err)
	}
	for _, c := range fake.Calls() {
		if strings.Join(c.Args, " ") == "volume rm x-abox-cache-h1-npm" {
			t.Error("RemoveCaches removed a volume that is not the project's")
		}
	}
}
