package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/telemetry"
)

// wardRun writes the warden.json of run 0123abcd of a fresh project, at phase, and makes its
// owner lock, which nobody holds.
func wardRun(t *testing.T, phase string) *wardenState {
	t.Helper()
	proj := paths.Project{Workspace: t.TempDir(), Dir: t.TempDir(), Hash: "feedface"}
	st := &wardenState{
		Phase: phase, Project: proj, ProjectName: "p", ID: "0123abcd",
		Dir: filepath.Join(proj.Runs(), "20261207T100000Z-0123abcd"), Netd: "abox-netd-p-0123abcd", Agent: "agent-p-0123abcd",
		Started: time.Now().Add(-time.Minute), PromptSHA: "0011223344556677",
		Record: RecordInfo{Profile: "default", PermissionMode: "default", Servers: []string{}},
	}
	writeWard(t, st)
	f, err := lockOwner(proj, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // nobody holds it now
	return st
}

func writeWard(t *testing.T, st *wardenState) {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := statefs.WriteFile(filepath.Join(st.Dir, wardenFile), b, statefs.PrivateMode); err != nil {
		t.Fatal(err)
	}
}

// takeoverFake is a docker whose agent is running and whose netd finishes.
func takeoverFake(t *testing.T) *dockertest.Fake {
	fake := dockertest.New(t)
	fake.On("kill --signal KILL", docker.Result{}).Optional() // abox may have killed it already
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":137}}`)})
	fake.On("kill --signal USR1", docker.Result{})
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	fake.On("cp", docker.Result{})
	fake.On("rm", docker.Result{})
	fake.On("ps", docker.Result{}) // the sweep finds nothing left
	return fake
}

// ward runs the warden of st's run until it returns, with abox's end of the pipe given: what
// abox wrote, then its end (or not, when abox lives on: then the test cancels it).
func ward(t *testing.T, fake *dockertest.Fake, st *wardenState, abox string) *Outcome {
	t.Helper()
	out, err := Ward(context.Background(), WardEnv{Docker: docker.NewClient(fake, nil), RunDir: st.Dir,
		In: strings.NewReader(abox), Ready: io.Discard, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func argvs(fake *dockertest.Fake) []string {
	var out []string
	for _, c := range fake.Calls() {
		out = append(out, strings.Join(c.Args, " "))
	}
	return out
}

func onlyRun(t *testing.T, st *wardenState) telemetry.RunRecord {
	t.Helper()
	runs, _, err := telemetry.ReadRuns(st.Project.RunsIndex())
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs.jsonl = %+v, %v; want the one run", runs, err)
	}
	return runs[0]
}

// TestWardenFinishesARunWhoseAboxDied: abox's end of the pipe closes without its done line
// (kill -9, out of memory) while the agent runs. The warden kills the agent before anything
// else, finishes netd, harvests, removes both containers and records the run as abox-killed,
// then removes the run's owner lock.
func TestWardenFinishesARunWhoseAboxDied(t *testing.T) {
	st := wardRun(t, phaseAgent)
	fake := takeoverFake(t)
	out := ward(t, fake, st, msgState+"\n")
	if out == nil || out.Result != OutcomeKilled || out.ExitCode != 137 {
		t.Fatalf("Ward = %+v, want the run finished as %s with the agent's 137", out, OutcomeKilled)
	}
	calls := argvs(fake)
	if len(calls) == 0 || calls[0] != "kill --signal KILL "+st.Agent {
		t.Errorf("first docker call %q, want the agent killed first", calls)
	}
	for _, want := range []string{"kill --signal USR1 " + st.Netd, "rm --force --volumes " + st.Agent, "rm --force --volumes " + st.Netd} {
		if !slices.Contains(calls, want) {
			t.Errorf("calls %q lack %q", calls, want)
		}
	}
	rec := onlyRun(t, st)
	if rec.Outcome != OutcomeKilled || rec.PromptSHA != st.PromptSHA || rec.Profile != "default" || rec.ID != st.ID {
		t.Errorf("record %+v, want run %s as %s with abox's prompt digest", rec, st.ID, OutcomeKilled)
	}
	if !strings.Contains(strings.Join(rec.Notes, "\n"), "its warden finished the run") {
		t.Errorf("notes %q do not say the warden finished the run", rec.Notes)
	}
	if _, err := os.Stat(ownerPath(st.Project, st.ID)); err == nil {
		t.Error("the run's owner lock is left")
	}
}

// TestWardenRecordsACrash: abox's crash report came down the pipe before it ended: the run is
// recorded as abox-crashed, with the report's first line.
func TestWardenRecordsACrash(t *testing.T) {
	st := wardRun(t, phaseAgent)
	out := ward(t, takeoverFake(t), st, "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\n")
	if out.Result != OutcomeCrashed || !strings.Contains(strings.Join(out.Notes, "\n"), "abox crashed (panic: runtime error") {
		t.Errorf("Ward = %s %q, want %s with the panic", out.Result, out.Notes, OutcomeCrashed)
	}
}

// TestWardenLeavesAFinishedRun: abox said it was done: the warden touches nothing.
func TestWardenLeavesAFinishedRun(t *testing.T) {
	st := wardRun(t, phaseRecorded)
	fake := dockertest.New(t)
	if out := ward(t, fake, st, msgState+"\n"+msgDone+"\n"); out != nil {
		t.Errorf("Ward = %+v after abox's done line, want nothing", out)
	}
	if calls := argvs(fake); len(calls) > 0 {
		t.Errorf("docker calls %q after abox's done line", calls)
	}
}

// TestWardenAfterTheRecord: abox died after it recorded the run: the warden only removes what
// is left, and does not record the run twice.
func TestWardenAfterTheRecord(t *testing.T) {
	st := wardRun(t, phaseRecorded)
	st.Result = "exited"
	writeWard(t, st)
	fake := dockertest.New(t)
	fake.On("ps --no-trunc --format {{json .}} --all --filter label=abox.hash=feedface --filter label=abox.managed=true --filter label=abox.run="+st.ID,
		docker.Result{Stdout: []byte(`{"ID":"n1","Names":"` + st.Netd + `"}` + "\n")}).Once()
	fake.On("rm --force --volumes "+st.Netd, docker.Result{})
	fake.On("ps", docker.Result{})
	if out := ward(t, fake, st, ""); out.Result != "exited" {
		t.Errorf("Ward = %s, want abox's own outcome kept", out.Result)
	}
	if _, err := os.Stat(st.Project.RunsIndex()); err == nil {
		t.Error("the warden recorded a run abox had recorded")
	}
}

// TestWardenDuringTeardown: abox died while tearing the run down: the warden finishes the
// teardown, and the record keeps what abox knew — its outcome, exit code and notes.
func TestWardenDuringTeardown(t *testing.T) {
	st := wardRun(t, phaseTeardown)
	st.Result, st.ExitCode, st.Notes = "timeout", 124, []string{"the run hit its timeout of 1h0m0s and was stopped"}
	writeWard(t, st)
	ward(t, takeoverFake(t), st, "")
	rec := onlyRun(t, st)
	if rec.Outcome != "timeout" || rec.ExitCode != 137 || len(rec.Notes) < 2 || rec.Notes[0] != st.Notes[0] ||
		!strings.Contains(rec.Notes[1], "finished its teardown") {
		t.Errorf("record %s exit %d notes %q, want abox's timeout and notes, and the warden's", rec.Outcome, rec.ExitCode, rec.Notes)
	}
}

// TestWardenKeepsTheDeadline: abox lives but does not act (stopped, suspended) while its agent
// runs past the run's deadline: the warden kills the agent once the grace is over, and leaves
// the rest to abox.
func TestWardenKeepsTheDeadline(t *testing.T) {
	st := wardRun(t, phaseAgent)
	st.Deadline = time.Now().Add(-wardenGrace - time.Second)
	writeWard(t, st)
	fake := dockertest.New(t)
	killed := make(chan struct{})
	fake.OnFunc("kill --signal KILL "+st.Agent, func(docker.Invocation) (docker.Result, error) {
		close(killed)
		return docker.Result{}, nil
	})
	r, w := io.Pipe()
	done := make(chan *Outcome)
	go func() {
		out, _ := Ward(context.Background(), WardEnv{Docker: docker.NewClient(fake, nil), RunDir: st.Dir, In: r, Ready: io.Discard, Log: io.Discard})
		done <- out
	}()
	select {
	case <-killed:
	case <-time.After(5 * time.Second):
		t.Fatal("the warden did not kill an agent past its deadline")
	}
	io.WriteString(w, msgDone+"\n")
	if out := <-done; out != nil {
		t.Errorf("Ward = %+v, want abox left to record the run", out)
	}
}

// TestOverdue: an agent is overdue once its deadline and the grace have passed on the wall
// clock; not before, not without a deadline, not once abox tears the run down.
func TestOverdue(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name     string
		phase    string
		deadline time.Time
		want     bool
	}{
		{"past the grace", phaseAgent, now.Add(-wardenGrace), true},
		{"within the grace", phaseAgent, now.Add(-wardenGrace + time.Second), false},
		{"no deadline", phaseAgent, time.Time{}, false},
		{"in teardown", phaseTeardown, now.Add(-time.Hour), false},
		{"before the agent", phaseStarted, now.Add(-time.Hour), false},
	} {
		if got := overdue(&wardenState{Phase: tc.phase, Deadline: tc.deadline}, now); got != tc.want {
			t.Errorf("%s: overdue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWardRefusesAnotherRunsState: a warden.json naming another run's directory is refused:
// the warden never tears down what it was not started for.
func TestWardRefusesAnotherRunsState(t *testing.T) {
	st := wardRun(t, phaseAgent)
	other := filepath.Join(t.TempDir(), "elsewhere")
	os.MkdirAll(other, 0o700)
	b, _ := os.ReadFile(filepath.Join(st.Dir, wardenFile))
	os.WriteFile(filepath.Join(other, wardenFile), b, 0o600)
	if _, err := Ward(context.Background(), WardEnv{RunDir: other, In: strings.NewReader(""), Ready: io.Discard, Log: io.Discard}); err == nil {
		t.Error("Ward accepted another run's warden.json")
	}
}

// TestSweepWaitsForCreatesOnTheirWay: abox died while a docker command of its own was creating
// the run's netd (its own process group: abox's death does not end it). The takeover's sweep
// goes on while that command runs and removes the netd it makes, after the teardown looked.
func TestSweepWaitsForCreatesOnTheirWay(t *testing.T) {
	st := wardRun(t, phaseStarted)
	creator := exec.Command("sh", "-c", "sleep 1", "docker", "run", "--detach", "--name", st.Netd)
	if err := creator.Start(); err != nil {
		t.Fatal(err)
	}
	go creator.Wait()
	fake := dockertest.New(t)
	fake.On("stop", docker.Result{}).Optional()
	fake.On("cp", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such container: x\n")}).Optional()
	fake.On("rm", docker.Result{})
	landed := time.Now().Add(500 * time.Millisecond) // while the creator still runs
	fake.OnFunc("ps", func(docker.Invocation) (docker.Result, error) {
		if time.Now().Before(landed) {
			return docker.Result{}, nil
		}
		return docker.Result{Stdout: []byte(`{"ID":"n1","Names":"` + st.Netd + `"}` + "\n")}, nil
	}).Once()
	fake.On("ps", docker.Result{})
	ward(t, fake, st, "")
	if !slices.Contains(argvs(fake), "rm --force --volumes "+st.Netd) {
		t.Errorf("calls %q: the netd created after the teardown was not removed", argvs(fake))
	}
	if _, err := os.Stat(ownerPath(st.Project, st.ID)); err == nil {
		t.Error("the owner lock is left although the run is clear")
	}
}

// TestTakeoverKeepsTheLockOfARunItCannotClear: the daemon never lets the run's netd go: the
// warden records what it could and keeps the run's owner lock, so that the project's next run
// finds the run and does not start beside it.
func TestTakeoverKeepsTheLockOfARunItCannotClear(t *testing.T) {
	st := wardRun(t, phaseRecorded)
	st.Started = time.Now().Add(-time.Hour)
	writeWard(t, st)
	fake := dockertest.New(t)
	fake.On("ps", docker.Result{Stdout: []byte(`{"ID":"n1","Names":"` + st.Netd + `"}` + "\n")})
	fake.On("rm", docker.Result{ExitCode: 1, Stderr: []byte("Error response from daemon: cannot remove container: device or resource busy\n")})
	d := docker.NewClient(fake, nil)
	_, err := takeover(context.Background(), d, st, OutcomeKilled, "test", time.Now().Add(-takeoverPatience))
	if err == nil || !strings.Contains(err.Error(), st.Netd) && !strings.Contains(err.Error(), "busy") {
		t.Errorf("takeover of a run it cannot clear = %v, want an error naming what is left", err)
	}
}
