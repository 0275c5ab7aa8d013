package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/statefs"
)

func running(name, role, run string) *docker.Container {
	c := &docker.Container{Name: "/" + name}
	c.State.Running = true
	c.Config.Labels = map[string]string{"abox.role": role, "abox.run": run}
	return c
}

// TestOrphans: a running agent or netd is an orphan when nobody holds its run's owner lock (or
// there is none); a run whose abox or warden holds it, the spare netd, a finished netd on the
// retire list, a stopped container and the gateway are not.
func TestOrphans(t *testing.T) {
	proj := paths.Project{Workspace: t.TempDir(), Dir: t.TempDir()}
	held, err := lockOwner(proj, "aaaa0001")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	gone, _ := lockOwner(proj, "aaaa0002")
	gone.Close()
	statefs.WriteFile(filepath.Join(proj.Dir, spareRecordFile), []byte(`{"run_id":"aaaa0004","netd":"abox-netd-p-aaaa0004"}`), 0o600)
	statefs.WriteFile(filepath.Join(proj.Dir, retiredFile), []byte("abox-netd-p-aaaa0005\n"), 0o600)
	stopped := running("agent-p-aaaa0006", "agent", "aaaa0006")
	stopped.State.Running = false
	cs := []*docker.Container{
		running("agent-p-aaaa0001", "agent", "aaaa0001"), running("abox-netd-p-aaaa0001", "netd", "aaaa0001"),
		running("agent-p-aaaa0002", "agent", "aaaa0002"), running("abox-netd-p-aaaa0002", "netd", "aaaa0002"),
		running("agent-p-aaaa0003", "agent", "aaaa0003"),
		running("abox-netd-p-aaaa0004", "netd", "aaaa0004"),
		running("abox-netd-p-aaaa0005", "netd", "aaaa0005"),
		stopped,
		running("abox-gw-default", "gateway", ""),
	}
	got := Orphans(proj, cs)
	want := []Orphan{
		{Run: "aaaa0002", Containers: []string{"agent-p-aaaa0002", "abox-netd-p-aaaa0002"}},
		{Run: "aaaa0003", Containers: []string{"agent-p-aaaa0003"}},
	}
	if len(got) != len(want) {
		t.Fatalf("Orphans = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Run != want[i].Run || !slices.Equal(got[i].Containers, want[i].Containers) {
			t.Errorf("Orphans[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestReapFinishesOrphans: a run whose owner lock nobody holds is finished as its warden would
// have finished it, recorded as orphaned, and its lock removed; a run whose lock is held is left
// alone, and without any unheld lock Reap asks Docker nothing.
func TestReapFinishesOrphans(t *testing.T) {
	st := wardRun(t, phaseAgent)
	live, err := lockOwner(st.Project, "bbbb0001") // another run of the project, alive
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	fake := takeoverFake(t)
	reaped, err := Reap(context.Background(), docker.NewClient(fake, nil), st.Project)
	if err != nil || len(reaped) != 1 || reaped[0] != (Reaped{Run: st.ID, Outcome: OutcomeOrphaned, Recorded: true}) {
		t.Fatalf("Reap = %+v, %v; want run %s reaped as %s", reaped, err, st.ID, OutcomeOrphaned)
	}
	if rec := onlyRun(t, st); rec.Outcome != OutcomeOrphaned {
		t.Errorf("recorded as %s, want %s", rec.Outcome, OutcomeOrphaned)
	}
	if _, err := os.Stat(ownerPath(st.Project, st.ID)); err == nil {
		t.Error("the reaped run's owner lock is left")
	}
	if _, err := os.Stat(ownerPath(st.Project, "bbbb0001")); err != nil {
		t.Errorf("the live run's owner lock was taken away: %v", err)
	}
	again := dockertest.New(t) // no reply: a docker call would fail the test
	if reaped, err := Reap(context.Background(), docker.NewClient(again, nil), st.Project); err != nil || len(reaped) != 0 {
		t.Errorf("Reap with nothing to reap = %+v, %v", reaped, err)
	}
}

// TestReapBeforeTheWarden: abox died between taking the run's owner lock and starting its
// warden, so there is no warden.json: the containers carrying the run's label (a claimed spare
// netd) are removed, and nothing is recorded.
func TestReapBeforeTheWarden(t *testing.T) {
	proj := paths.Project{Workspace: t.TempDir(), Dir: t.TempDir(), Hash: "feedface"}
	f, err := lockOwner(proj, "cccc0001")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fake := dockertest.New(t)
	fake.On("ps --no-trunc --format {{json .}} --all --filter label=abox.hash=feedface --filter label=abox.managed=true --filter label=abox.run=cccc0001",
		docker.Result{Stdout: []byte(`{"ID":"n1","Names":"abox-netd-p-cccc0001","Labels":"abox.run=cccc0001"}` + "\n")})
	fake.On("rm --force --volumes abox-netd-p-cccc0001", docker.Result{})
	reaped, err := Reap(context.Background(), docker.NewClient(fake, nil), proj)
	if err != nil || len(reaped) != 1 || reaped[0].Outcome != "" {
		t.Fatalf("Reap = %+v, %v; want the run's netd removed and nothing recorded", reaped, err)
	}
	if _, err := os.Stat(proj.RunsIndex()); err == nil {
		t.Error("a run that never started its agent was recorded")
	}
}

// TestRunOwnedUntilDone: a run's owner lock is held from before its netd starts until the
// caller is done with it, and its warden.json follows the run: the agent's phase with its
// deadline, the teardown with abox's outcome, the record.
func TestRunOwnedUntilDone(t *testing.T) {
	fake := dockertest.New(t)
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	fake.On("exec", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)})
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(time.Second) // netd outlives the agent
		return docker.Result{}, nil
	}).Optional()
	var atStart *wardenState
	s := startFixture(t, fake)
	fake.OnFunc("start", func(docker.Invocation) (docker.Result, error) {
		dirs, _ := filepath.Glob(filepath.Join(s.Project.Runs(), "*"))
		if len(dirs) == 1 {
			atStart, _ = loadWard(dirs[0])
		}
		return docker.Result{Stdout: []byte(`{"type":"result"}` + "\n")}, nil
	})
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":0}}`)})
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.On("rm", docker.Result{})
	fake.On("cp", docker.Result{})
	out, err := s.Run(context.Background(), Options{Prompt: "hi", Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if atStart == nil || atStart.Phase != phaseAgent || atStart.Deadline.IsZero() || atStart.Transcript == "" {
		t.Errorf("warden.json when the agent started: %+v, want the agent's phase with its deadline", atStart)
	}
	if !ownerHeld(s.Project, out.ID) {
		t.Error("the run's owner lock is not held after Run")
	}
	if st, _ := loadWard(out.Dir); st == nil || st.Phase != phaseTeardown || st.Result != "exited" {
		t.Errorf("warden.json after Run: %+v, want the teardown with abox's outcome", st)
	}
	if err := s.Record(Options{Prompt: "hi"}, out); err != nil {
		t.Fatal(err)
	}
	if st, _ := loadWard(out.Dir); st == nil || st.Phase != phaseRecorded {
		t.Errorf("warden.json after Record: %+v, want the run recorded", st)
	}
	s.Done(out)
	if _, err := os.Stat(ownerPath(s.Project, out.ID)); err == nil {
		t.Error("the run's owner lock is left after Done")
	}
}

// TestRunWithoutWardenRefused: a sandbox with no warden is refused before anything starts.
func TestRunWithoutWardenRefused(t *testing.T) {
	s := startFixture(t, dockertest.New(t)) // no reply: a docker call would fail the test
	s.Warden = nil
	out, err := s.Run(context.Background(), Options{Prompt: "hi"})
	if !errors.Is(err, ErrNoWarden) || !errors.Is(err, ErrBoundary) || out.Result != "refused" {
		t.Errorf("Run without a warden = %s, %v; want a boundary refusal naming the warden", out.Result, err)
	}
}
