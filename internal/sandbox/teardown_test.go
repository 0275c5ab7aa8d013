package sandbox

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// deadlineRunner records, for every docker call, how much time its context had left when the
// call was made.
type deadlineRunner struct {
	r    docker.Runner
	mu   sync.Mutex
	left map[string][]time.Duration // by the call's first argument
}

func (d *deadlineRunner) Run(ctx context.Context, inv docker.Invocation) (docker.Result, error) {
	left := time.Duration(-1) // no deadline
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	d.mu.Lock()
	d.left[inv.Args[0]] = append(d.left[inv.Args[0]], left)
	d.mu.Unlock()
	return d.r.Run(ctx, inv)
}

// TestTeardownStepsHaveTheirOwnDeadlines: every teardown step gets its whole deadline when it
// starts, however long the agent ran. A deadline made when the run started (as one once was)
// leaves a long run's teardown with nothing: every step failed, nothing was harvested and netd
// was left running. Here the agent runs for a while and each step must still have its own
// time, not what is left of a run-wide one.
func TestTeardownStepsHaveTheirOwnDeadlines(t *testing.T) {
	const agentRuns = 1500 * time.Millisecond
	fake := dockertest.New(t)
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	fake.On("exec", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)})
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(3 * agentRuns) // netd outlives the agent
		return docker.Result{}, nil
	}).Optional()
	fake.OnFunc("start", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(agentRuns)
		return docker.Result{}, nil
	})
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":0}}`)})
	fake.On("stop", docker.Result{}).Optional()
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.On("rm", docker.Result{})
	fake.On("cp", docker.Result{})
	rec := &deadlineRunner{r: fake, left: map[string][]time.Duration{}}
	s := &Sandbox{
		Docker: docker.NewClient(rec, nil), Warden: goWarden(docker.NewClient(rec, nil), nil),
		Project:  paths.Project{Workspace: t.TempDir(), Dir: t.TempDir()},
		Baseline: policy.ExpectedRuleset(policy.NetdUID),
		Spec: &render.RunSpec{
			Netd:  render.RunCommand{Args: []string{"run", "--name", "abox-netd-p-" + render.RunToken}, Image: "abox-netd:1"},
			Agent: render.RunCommand{Args: []string{"create", "--name", "agent-p-" + render.RunToken}, Image: "abox-agent-p:1", Command: []string{"claude"}},
		},
		Now: time.Now,
	}
	out, err := s.Run(context.Background(), Options{Prompt: "hi"})
	if err != nil {
		t.Fatalf("Run: %v (notes %v)", err, out.Notes)
	}
	for _, step := range []struct {
		call string
		want time.Duration
	}{{"kill", finishTimeout}, {"cp", harvestTimeout}, {"rm", removeTimeout}} {
		lefts := rec.left[step.call]
		if len(lefts) == 0 {
			t.Errorf("teardown made no %s call", step.call)
		}
		for _, left := range lefts {
			if left < step.want-agentRuns/2 || left > step.want {
				t.Errorf("docker %s had %v left of its deadline, want its own %v from when the step started", step.call, left, step.want)
			}
		}
	}
	if n := len(rec.left["rm"]); n != 2 {
		t.Errorf("teardown removed %d containers, want the agent and netd", n)
	}
}
