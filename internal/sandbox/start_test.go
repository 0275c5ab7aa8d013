package sandbox

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// netdOutput is what a fake netd prints: its ready line, then the line of its finish, which the
// teardown of a run whose agent ran waits for.
const netdOutput = `{"event":"ready"}` + "\n" + `{"event":"finished"}` + "\n"

// startFixture is a sandbox over a fake docker whose agent create and netd ready can be held.
func startFixture(t *testing.T, fake *dockertest.Fake) *Sandbox {
	return &Sandbox{
		Docker: docker.NewClient(fake, nil), Warden: goWarden(docker.NewClient(fake, nil), nil),
		Project:  paths.Project{Workspace: t.TempDir(), Dir: t.TempDir()},
		Baseline: policy.ExpectedRuleset(policy.NetdUID),
		Spec: &render.RunSpec{
			Netd:  render.RunCommand{Args: []string{"run", "--name", "abox-netd-p-" + render.RunToken}, Image: "abox-netd:1"},
			Agent: render.RunCommand{Args: []string{"create", "--name", "agent-p-" + render.RunToken}, Image: "abox-agent-p:1", Command: []string{"claude"}},
		},
		Now: time.Now,
	}
}

// TestAgentCreatedWhileNetdStarts: the agent's `docker create` overlaps netd's start-up (the
// create answers only once netd's logs are followed, and netd's ready line only once the create
// was asked: one after the other they would time out), yet the agent starts only after the
// ruleset was read back, and the phases still add up in order.
func TestAgentCreatedWhileNetdStarts(t *testing.T) {
	fake := dockertest.New(t)
	var createAsked, logsAsked sync.Once
	created, following := make(chan struct{}), make(chan struct{})
	hold := func(mine func(), other chan struct{}, res docker.Result) func(docker.Invocation) (docker.Result, error) {
		return func(docker.Invocation) (docker.Result, error) {
			mine()
			select {
			case <-other:
				return res, nil
			case <-time.After(5 * time.Second):
				return docker.Result{ExitCode: 1, Stderr: []byte("not overlapped\n")}, nil
			}
		}
	}
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	fake.OnFunc("create", hold(func() { createAsked.Do(func() { close(created) }) }, following, docker.Result{Stdout: []byte("agent-id\n")}))
	fake.OnFunc("logs", hold(func() { logsAsked.Do(func() { close(following) }) }, created, docker.Result{Stdout: []byte(netdOutput)}))
	fake.On("exec", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)})
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(time.Second) // netd outlives the agent
		return docker.Result{}, nil
	}).Optional()
	fake.On("start", docker.Result{Stdout: []byte(`{"type":"result"}` + "\n")})
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":0}}`)})
	fake.On("stop", docker.Result{}).Optional()
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.On("rm", docker.Result{})
	fake.On("cp", docker.Result{})
	s := startFixture(t, fake)
	out, err := s.Run(context.Background(), Options{Prompt: "hi"})
	if err != nil || out.Result != "exited" {
		t.Fatalf("Run = %v, %q (notes %v)", err, out.Result, out.Notes)
	}
	var order []string
	for _, c := range fake.Calls() {
		order = append(order, c.Args[0])
	}
	if i, j := slices.Index(order, "exec"), slices.Index(order, "start"); i < 0 || j < i {
		t.Errorf("calls %v: the agent started before the ruleset was read back", order)
	}
	var names []string
	for _, p := range out.Phases {
		names = append(names, p.Name)
	}
	want := []string{"prepare", "netd start", "netd ready", "policy verify", "agent create"}
	if len(names) < len(want) || !slices.Equal(names[:len(want)], want) {
		t.Errorf("phases %v, want them to begin %v", names, want)
	}
}

// TestRefusedRunWaitsForTheCreate: when netd's verification fails while the agent's create is
// still running, the run is refused, the agent never starts, and the teardown removes the agent
// only once its create ended (removed earlier, the container the create then makes would be
// left behind).
func TestRefusedRunWaitsForTheCreate(t *testing.T) {
	fake := dockertest.New(t)
	var mu sync.Mutex
	createDone := false
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	fake.OnFunc("create", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		createDone = true
		mu.Unlock()
		return docker.Result{Stdout: []byte("agent-id\n")}, nil
	})
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	fake.On("exec", docker.Result{Stdout: []byte(`{"nftables": []}`)}) // not the expected ruleset
	removedEarly := false
	fake.OnFunc("rm", func(inv docker.Invocation) (docker.Result, error) {
		mu.Lock()
		if !createDone {
			removedEarly = true
		}
		mu.Unlock()
		return docker.Result{}, nil
	})
	fake.On("stop", docker.Result{}).Optional()
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.On("cp", docker.Result{})
	s := startFixture(t, fake)
	out, err := s.Run(context.Background(), Options{Prompt: "hi"})
	if !errors.Is(err, ErrBoundary) || out.Result != "refused" {
		t.Fatalf("Run = %v, %q; want a boundary refusal", err, out.Result)
	}
	if removedEarly {
		t.Error("a container was removed before the agent's create ended")
	}
	for _, c := range fake.Calls() {
		if c.Args[0] == "start" {
			t.Errorf("the agent started after a failed verification: %q", c.Args)
		}
	}
}

// TestExitCodeReadWhileNetdFinishes: the agent's exit code comes from its container, inspected
// while netd finishes (the inspect answers only once netd's finish signal was sent: inspected
// first, it would time out and the exit code be lost) and before the agent is removed.
func TestExitCodeReadWhileNetdFinishes(t *testing.T) {
	fake := dockertest.New(t)
	stopping := make(chan struct{})
	var once sync.Once
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	fake.On("exec", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)})
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(time.Second) // netd outlives the agent
		return docker.Result{}, nil
	}).Optional()
	fake.On("start", docker.Result{ExitCode: 7})
	fake.OnFunc("container inspect", func(docker.Invocation) (docker.Result, error) {
		select {
		case <-stopping:
			return docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":7}}`)}, nil
		case <-time.After(5 * time.Second):
			return docker.Result{ExitCode: 1, Stderr: []byte("not overlapped\n")}, nil
		}
	})
	fake.OnFunc("kill --signal USR1", func(docker.Invocation) (docker.Result, error) {
		once.Do(func() { close(stopping) })
		return docker.Result{}, nil
	})
	fake.On("rm", docker.Result{})
	fake.On("cp", docker.Result{})
	s := startFixture(t, fake)
	out, err := s.Run(context.Background(), Options{Prompt: "hi"})
	if err != nil || out.ExitCode != 7 || out.Result != "exited" {
		t.Fatalf("Run = %v, exit %d, %q (notes %v); want exit 7", err, out.ExitCode, out.Result, out.Notes)
	}
	var order []string
	for _, c := range fake.Calls() {
		order = append(order, strings.Join(c.Args, " "))
	}
	i := slices.IndexFunc(order, func(a string) bool { return strings.HasPrefix(a, "container inspect") })
	j := slices.IndexFunc(order, func(a string) bool { return strings.HasPrefix(a, "rm") && strings.Contains(a, "agent-p-") })
	if i < 0 || j < i {
		t.Errorf("calls %q: the agent was removed before its exit code was read", order)
	}
}
