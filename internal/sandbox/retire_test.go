package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/policy"
)

// finishFixture is a run over a fake docker whose netd prints out as its output.
func finishFixture(t *testing.T, out string) (*dockertest.Fake, *Sandbox) {
	fake := dockertest.New(t)
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
	fake.On("logs", docker.Result{Stdout: []byte(out)})
	fake.On("exec", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)})
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(time.Second) // netd outlives the agent
		return docker.Result{}, nil
	}).Optional()
	fake.On("start", docker.Result{Stdout: []byte(`{"type":"result"}` + "\n")})
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":0}}`)})
	fake.On("rm", docker.Result{})
	fake.On("cp", docker.Result{})
	return fake, startFixture(t, fake)
}

func callLines(fake *dockertest.Fake) []string {
	var calls []string
	for _, c := range fake.Calls() {
		calls = append(calls, strings.Join(c.Args, " "))
	}
	return calls
}

// TestTeardownFinishesAndRetiresNetd: once the agent ran, netd is sent the finish signal, not
// stopped; its logs are copied out after its finished line, and with Retire it is put on the
// retire list rather than removed, so that the run returns without waiting for Docker to tear
// it down. The agent is still removed by the run.
func TestTeardownFinishesAndRetiresNetd(t *testing.T) {
	fake, s := finishFixture(t, netdOutput)
	fake.On("kill --signal USR1", docker.Result{})
	out, err := s.Run(context.Background(), Options{Prompt: "hi", Retire: true})
	if err != nil || out.Result != "exited" {
		t.Fatalf("Run = %v, %q (notes %v)", err, out.Result, out.Notes)
	}
	calls := callLines(fake)
	for _, c := range calls {
		if strings.HasPrefix(c, "stop") || (strings.HasPrefix(c, "rm") && strings.Contains(c, out.Netd)) {
			t.Errorf("call %q: netd was stopped or removed by the run, want it finished and retired", c)
		}
	}
	kill := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "kill --signal USR1 "+out.Netd) })
	cp := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "cp ") })
	if kill < 0 || cp < kill {
		t.Errorf("calls %q: want netd's finish signal before its logs are copied", calls)
	}
	if !slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "rm") && strings.Contains(c, out.Agent) }) {
		t.Errorf("calls %q: the agent was not removed", calls)
	}
	names, _, err := Retired(s.Project)
	if err != nil || !slices.Equal(names, []string{out.Netd}) {
		t.Errorf("retire list = %q, %v; want [%s]", names, err, out.Netd)
	}
	if got := phaseNames(out); !slices.Contains(got, "netd finish") || slices.Contains(got, "netd stop") {
		t.Errorf("phases %v, want netd finish instead of netd stop", got)
	}
}

// TestTeardownStopsANetdThatDoesNotFinish: a netd whose output ends without the finished line
// (it exited, or is not one that finishes) is stopped and removed as before, and the run says so;
// it is never retired.
func TestTeardownStopsANetdThatDoesNotFinish(t *testing.T) {
	fake, s := finishFixture(t, `{"event":"ready"}`+"\n")
	fake.On("kill --signal USR1", docker.Result{})
	fake.On("stop", docker.Result{})
	out, err := s.Run(context.Background(), Options{Prompt: "hi", Retire: true})
	if err != nil || out.Result != "exited" {
		t.Fatalf("Run = %v, %q (notes %v)", err, out.Result, out.Notes)
	}
	if !slices.ContainsFunc(out.Notes, func(n string) bool { return strings.Contains(n, "finishing netd") }) {
		t.Errorf("notes %q: want one saying netd did not finish", out.Notes)
	}
	calls := callLines(fake)
	stop := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "stop") })
	cp := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "cp ") })
	if stop < 0 || cp < stop {
		t.Errorf("calls %q: want netd stopped before its logs are copied", calls)
	}
	if !slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "rm") && strings.Contains(c, out.Netd) }) {
		t.Errorf("calls %q: netd was not removed", calls)
	}
	if names, _, _ := Retired(s.Project); len(names) != 0 {
		t.Errorf("retire list = %q, want nothing retired", names)
	}
}

// TestTeardownRemovesNetdWithoutRetire: without Retire (no after-run process will come), the
// finished netd is removed by the run itself.
func TestTeardownRemovesNetdWithoutRetire(t *testing.T) {
	fake, s := finishFixture(t, netdOutput)
	fake.On("kill --signal USR1", docker.Result{})
	out, err := s.Run(context.Background(), Options{Prompt: "hi"})
	if err != nil {
		t.Fatalf("Run = %v (notes %v)", err, out.Notes)
	}
	if !slices.ContainsFunc(callLines(fake), func(c string) bool { return strings.HasPrefix(c, "rm") && strings.Contains(c, out.Netd) }) {
		t.Errorf("calls %q: netd was not removed", callLines(fake))
	}
	if names, _, _ := Retired(s.Project); len(names) != 0 {
		t.Errorf("retire list = %q, want nothing retired", names)
	}
}

// TestRemoveRetired: every netd on the list is removed; those gone leave the list, one whose
// removal failed stays for the next after-run process, entries that are not a netd's name are
// never passed to docker, and a name added while the removals ran is kept.
func TestRemoveRetired(t *testing.T) {
	fake := dockertest.New(t)
	s := startFixture(t, fake)
	list := filepath.Join(s.Project.Dir, retiredFile)
	os.WriteFile(list, []byte("abox-netd-p-1\n--force\nabox-netd-p-2\nagent-p-3\n\nabox-netd-p-1\nabox-netd-p-4\n"), 0o600)
	fake.OnFunc("rm", func(inv docker.Invocation) (docker.Result, error) {
		switch name := inv.Args[len(inv.Args)-1]; name {
		case "abox-netd-p-2":
			return docker.Result{ExitCode: 1, Stderr: []byte("Error response from daemon: removal in progress\n")}, nil
		case "abox-netd-p-4":
			s.retire("abox-netd-p-5") // a run ends meanwhile
			return docker.Result{ExitCode: 1, Stderr: []byte("Error: No such container: abox-netd-p-4\n")}, nil
		}
		return docker.Result{}, nil
	})
	err := RemoveRetired(context.Background(), s.Docker, s.Project)
	if err == nil || !strings.Contains(err.Error(), "abox-netd-p-2") {
		t.Errorf("RemoveRetired = %v, want the failed removal of abox-netd-p-2", err)
	}
	var removed []string
	for _, c := range fake.Calls() {
		removed = append(removed, c.Args[len(c.Args)-1])
	}
	slices.Sort(removed)
	if want := []string{"abox-netd-p-1", "abox-netd-p-2", "abox-netd-p-4"}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	if names, _, _ := Retired(s.Project); !slices.Equal(names, []string{"abox-netd-p-2", "abox-netd-p-5"}) {
		t.Errorf("retire list afterwards = %q, want the failed one and the one added meanwhile", names)
	}
}

func phaseNames(out *Outcome) []string {
	var names []string
	for _, p := range out.Phases {
		names = append(names, p.Name)
	}
	return names
}
