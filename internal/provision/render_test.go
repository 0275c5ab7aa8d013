package provision

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

// lockHeld reports whether another holder has the lock file at path.
func lockHeld(t *testing.T, path string) bool {
	t.Helper()
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	err = unix.Flock(int(fd.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		unix.Flock(int(fd.Fd()), unix.LOCK_UN)
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}

// boundServers are the servers the registry of profile binds the project to; nil when it is
// not bound there.
func boundServers(t *testing.T, f *fixture, p *project.Project, profile string) []string {
	t.Helper()
	reg, err := gateway.LoadRegistry(f.ps.Gateway(profile), profile)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := reg.Projects[p.State.Hash]
	if !ok {
		return nil
	}
	return append([]string{}, b.Servers...)
}

// TestRender: render writes the artifacts under the project's lock and binds the project with
// the manifest approved before, not the workspace's, which the agent can write; up (approved)
// binds the one it has just approved.
func TestRender(t *testing.T) {
	f := newFixture(t, basic)
	p := f.project()
	write(t, p.State.Approved(), basic+"servers: [duckduckgo]\n")
	spec := f.env.Spec
	locked := false
	f.env.Spec = func(p *project.Project) (render.Spec, error) {
		locked = lockHeld(t, p.State.Lock())
		return spec(p)
	}
	arts, err := Render(f.env, p)
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	if !locked {
		t.Error("Render rendered without the project's lock")
	}
	if len(arts) == 0 || !exists(filepath.Join(p.State.Artifacts(), "runspec.json")) {
		t.Errorf("Render wrote no runspec.json (%d artifacts)", len(arts))
	}
	if got := boundServers(t, f, p, "default"); !slices.Equal(got, []string{"duckduckgo"}) {
		t.Errorf("bound servers %q, want the approved manifest's", got)
	}
	if _, err := RenderLocked(f.env, p, true); err != nil {
		t.Fatalf("RenderLocked(approved) = %v", err)
	}
	if got := boundServers(t, f, p, "default"); len(got) != 0 {
		t.Errorf("bound servers %q after up's render, want the workspace manifest's (none)", got)
	}
	if len(f.events) > 0 {
		t.Errorf("events %#v, want none", f.events)
	}
}

// TestRenderRefusesACorruptApproval: a corrupt approval binds nothing: the render is refused
// with the approval's error rather than binding the workspace's manifest.
func TestRenderRefusesACorruptApproval(t *testing.T) {
	f := newFixture(t, basic+"servers: [duckduckgo]\n")
	writeCatalog(t, f)
	p := f.project()
	write(t, p.State.Approved(), "version: [1\n")
	if _, err := Render(f.env, p); !errors.Is(err, approval.ErrCorrupt) {
		t.Fatalf("Render = %v, want the corrupt approval", err)
	}
	if exists(filepath.Join(f.ps.Gateway("default"), "registry.json")) {
		t.Error("a project with a corrupt approval was bound")
	}
}

// TestRenderReports: a project that leaves a profile, a review copy that cannot be written and
// a missing context directory are reported, in that order, and do not stop the render.
func TestRenderReports(t *testing.T) {
	f := newFixture(t, basic)
	p := f.project()
	if _, err := RenderLocked(f.env, p, true); err != nil {
		t.Fatal(err)
	}
	f.writeManifest("version: 1\nproject: p\nprofile: work\nmounts:\n  context: [~/missing]\n")
	os.RemoveAll(filepath.Join(f.ws, render.ReviewDir))
	write(t, filepath.Join(f.ws, render.ReviewDir), "not a directory\n")
	p = f.project()
	if _, err := RenderLocked(f.env, p, true); err != nil {
		t.Fatalf("RenderLocked = %v", err)
	}
	if len(f.events) != 3 {
		t.Fatalf("events %#v, want three", f.events)
	}
	if diff := cmp.Diff(Left{Project: "p", Profile: "default"}, f.events[0]); diff != "" {
		t.Errorf("first event (-want +got):\n%s", diff)
	}
	if _, ok := f.events[1].(Warned); !ok {
		t.Errorf("second event %#v, want the review copy's warning", f.events[1])
	}
	if diff := cmp.Diff(NoContext{Path: filepath.Join(f.root, "missing")}, f.events[2]); diff != "" {
		t.Errorf("third event (-want +got):\n%s", diff)
	}
}

// TestRenderStep: a manifest that loads but does not render is StepRender, and writes nothing.
func TestRenderStep(t *testing.T) {
	f := newFixture(t, basic+"servers: [nowhere]\nserver_network:\n  nowhere: none\n")
	writeCatalog(t, f)
	p := f.project()
	_, err := Render(f.env, p)
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepRender {
		t.Fatalf("Render = %v, want StepRender", err)
	}
	if exists(p.State.Artifacts()) {
		t.Error("a manifest that does not render wrote artifacts")
	}
}

// writeCatalog gives the fixture a catalog with one server, duckduckgo.
func writeCatalog(t *testing.T, f *fixture) {
	t.Helper()
	write(t, filepath.Join(f.root, "mcp", "catalogs", "docker-mcp.yaml"), "version: 3\nname: docker-mcp\nregistry:\n"+
		"  duckduckgo:\n    title: DuckDuckGo\n    type: server\n"+
		"    image: mcp/duckduckgo@sha256:1111111111111111111111111111111111111111111111111111111111111111\n"+
		"    tools:\n      - name: search\n")
}
