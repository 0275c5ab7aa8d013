package sandbox

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

// TestInterruptBeforeAgent: a Ctrl-C while netd starts ends the run as interrupted, not as a
// refused verification (exit 3 would tell the user the sandbox was unsound), and teardown
// still removes both containers.
func TestInterruptBeforeAgent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := dockertest.New(t)
	fake.OnFunc("run", func(docker.Invocation) (docker.Result, error) {
		cancel() // the signal arrives while `docker run` of netd is in flight
		return docker.Result{ExitCode: -1}, context.Canceled
	})
	fake.On("create", docker.Result{}).Optional()
	fake.On("rm", docker.Result{})
	fake.On("stop", docker.Result{}).Optional()
	fake.On("cp", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such container: abox-netd-p-x\n")}).Optional()
	s := &Sandbox{
		Docker: docker.NewClient(fake, nil), Warden: goWarden(docker.NewClient(fake, nil), nil),
		Project: paths.Project{Workspace: t.TempDir(), Dir: t.TempDir()},
		Spec: &render.RunSpec{
			Netd:  render.RunCommand{Args: []string{"run", "--name", "abox-netd-p-" + render.RunToken}, Image: "abox-netd:1"},
			Agent: render.RunCommand{Args: []string{"create", "--name", "agent-p-" + render.RunToken}, Image: "abox-agent-p:1", Command: []string{"claude"}},
		},
		Now: time.Now,
	}
	out, err := s.Run(ctx, Options{Prompt: "hi"})
	if !errors.Is(err, ErrInterrupted) || errors.Is(err, ErrBoundary) {
		t.Errorf("Run = %v, want ErrInterrupted and not ErrBoundary", err)
	}
	if out.Result != "interrupted" {
		t.Errorf("Result = %q, want interrupted", out.Result)
	}
	// Both containers of this run, by the names the runspec gives them, and nothing else.
	want := []string{"abox-netd-p-" + out.ID, "agent-p-" + out.ID}
	var removed []string
	for _, c := range fake.Calls() {
		if c.Args[0] == "rm" {
			removed = append(removed, c.Args[len(c.Args)-1])
		}
	}
	slices.Sort(removed)
	if out.ID == "" || !slices.Equal(removed, want) {
		t.Errorf("teardown removed %q, want %q; calls: %v", removed, want, fake.Calls())
	}
}
