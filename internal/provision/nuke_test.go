package provision

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/sandbox"
)

// nukeFixture is a rendered project with a cache, bound to the default gateway with a server.
func nukeFixture(t *testing.T) (*fixture, *project.Project) {
	t.Helper()
	f := newFixture(t, basic+"servers: [duckduckgo]\nmounts:\n  caches: [npm]\n")
	writeCatalog(t, f)
	p := f.project()
	if _, err := RenderLocked(f.env, p, true); err != nil {
		t.Fatal(err)
	}
	write(t, p.State.Approved(), string(p.Raw))
	f.events = nil
	return f, p
}

// TestNuke: nuke removes the project's containers (listed while it holds the project's lock
// and the spare netd's locks), the gateway no project needs any more, the cache volumes and
// the state, reports each, and only then asks about the Claude login volume, which it removes
// when told to.
func TestNuke(t *testing.T) {
	f, p := nukeFixture(t)
	var locked, sparesHeld bool
	f.fake.OnFunc("ps", func(docker.Invocation) (docker.Result, error) {
		locked = lockHeld(t, p.State.Lock())
		release, err := sandbox.HoldSpares(p.State, 0)
		if err == nil {
			release()
		}
		sparesHeld = err != nil
		return docker.Result{Stdout: []byte(`{"ID":"c1","Names":"a"}` + "\n" + `{"ID":"c2","Names":"b"}` + "\n")}, nil
	})
	f.fake.On("rm --force --volumes c1 c2", docker.Result{})
	f.fake.On("container inspect --format {{json .}} abox-gw-default",
		docker.Result{Stdout: []byte(`{"Id":"gw1","Name":"/abox-gw-default","Config":{"Labels":{"abox.managed":"true","abox.role":"gateway"}}}`)})
	f.fake.On("stop -t 10 abox-gw-default", docker.Result{})
	f.fake.On("rm --force --volumes abox-gw-default", docker.Result{})
	f.fake.On("volume ls --quiet --filter name=abox-cache-"+p.State.Hash+"-", docker.Result{Stdout: []byte("abox-cache-" + p.State.Hash + "-npm\n")})
	f.fake.On("volume rm abox-cache-"+p.State.Hash+"-npm", docker.Result{})
	f.fake.On("volume rm abox-claude-"+p.State.Hash, docker.Result{})
	var asked []string
	var eventsBefore int
	res, err := Nuke(context.Background(), f.env, p, NukeOptions{RemoveLogin: func(vol string) bool {
		asked, eventsBefore = append(asked, vol), len(f.events)
		return true
	}})
	if err != nil {
		t.Fatalf("Nuke = %v", err)
	}
	if !locked || !sparesHeld {
		t.Errorf("containers listed with the project's lock held %v, the spares' %v; want both", locked, sparesHeld)
	}
	want := []Event{
		Unbound{gateway.Unbound{Profile: "default", Removed: true}},
		Removed{Project: "p", Containers: 2},
	}
	if diff := cmp.Diff(want, f.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if login := "abox-claude-" + p.State.Hash; !slices.Equal(asked, []string{login}) || eventsBefore != len(want) ||
		*res != (Nuked{Login: login, LoginRemoved: true}) {
		t.Errorf("asked %q after %d events, Nuked %+v; want the login volume asked about last, and removed", asked, eventsBefore, *res)
	}
	for _, gone := range []string{p.State.Artifacts(), p.State.Approved(), filepath.Join(f.ws, ".devcontainer")} {
		if exists(gone) {
			t.Errorf("%s is still there", gone)
		}
	}
	if got := boundServers(t, f, p, "default"); got != nil {
		t.Errorf("the project is still bound, to %q", got)
	}
}

// TestNukeKeepsLogin: without a RemoveLogin that says so, the login volume stays.
func TestNukeKeepsLogin(t *testing.T) {
	f := newFixture(t, basic)
	p := f.project()
	f.fake.On("ps", docker.Result{})
	f.fake.On("volume ls", docker.Result{})
	res, err := Nuke(context.Background(), f.env, p, NukeOptions{})
	if err != nil || res.LoginRemoved || res.Login != "abox-claude-"+p.State.Hash {
		t.Fatalf("Nuke = %+v, %v; want the login volume kept", res, err)
	}
	if diff := cmp.Diff([]Event{Removed{Project: "p"}}, f.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestNukeStops: a daemon that does not answer (checked under the lock) removes nothing; a
// cache volume in use stops nuke in StepCaches with the state kept, and nothing is asked.
func TestNukeStops(t *testing.T) {
	t.Run("daemon down", func(t *testing.T) {
		f, p := nukeFixture(t)
		down := errors.New("daemon down")
		locked := false
		f.env.Ready = func(context.Context) error { locked = lockHeld(t, p.State.Lock()); return down }
		_, err := Nuke(context.Background(), f.env, p, NukeOptions{RemoveLogin: func(string) bool { t.Error("asked"); return true }})
		if !errors.Is(err, down) || !locked {
			t.Fatalf("Nuke = %v (lock held %v), want the daemon's error under the lock", err, locked)
		}
		if len(f.fake.Calls()) > 0 || !exists(p.State.Artifacts()) {
			t.Errorf("nuke went on without a daemon: %q", f.commands())
		}
	})
	t.Run("cache in use", func(t *testing.T) {
		f, p := nukeFixture(t)
		f.fake.On("ps", docker.Result{})
		f.fake.On("container inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such container: abox-gw-default\n")})
		f.fake.On("volume ls", docker.Result{Stdout: []byte("abox-cache-" + p.State.Hash + "-npm\n")})
		f.fake.On("volume rm", docker.Result{ExitCode: 1, Stderr: []byte("Error response from daemon: remove abox-cache: volume is in use\n")})
		_, err := Nuke(context.Background(), f.env, p, NukeOptions{RemoveLogin: func(string) bool { t.Error("asked"); return true }})
		var se *StepError
		if !errors.As(err, &se) || se.Step != StepCaches {
			t.Fatalf("Nuke = %v, want StepCaches", err)
		}
		if !exists(p.State.Artifacts()) {
			t.Error("the state went although a cache stayed")
		}
	})
}
