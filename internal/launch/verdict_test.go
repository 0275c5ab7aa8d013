package launch

import (
	"errors"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/watch"
)

// TestVerdictOrder starts from a run where everything went wrong at once and takes one thing
// away at a time: each time the verdict is the first of what is left, in the documented order.
func TestVerdictOrder(t *testing.T) {
	runErr := errors.New("netd died")
	collectErr := &isolate.FinishError{ID: "r1", Step: isolate.StepCollect, Err: errors.New("fetch failed")}
	out := &sandbox.Outcome{
		ID: "r1", ExitCode: 5,
		Exec:       &sandbox.ExecReport{Changes: []watch.ExecChange{{Area: watch.AreaFile, Name: "Makefile", Change: "changed"}}},
		Summary:    telemetry.Summary{IsError: true, LastText: "Please run /login"},
		MaskEvents: []telemetry.MaskEvent{{Mask: ".env", Kind: telemetry.MaskPlanted, Planted: ".env", PlantedType: "file"}},
	}
	rep := &Report{Outcome: out, OnExecChange: manifest.ExecChangeFail, Collected: &isolate.Result{Err: collectErr}}
	steps := []struct {
		name string
		is   func(error) bool
		next func() // takes the verdict away
	}{
		{"exec change", as[*ExecChangeError], func() { rep.OnExecChange = manifest.ExecChangeWarn }},
		{"logged out", is(ErrLoggedOut), func() { rep.RunErr = runErr }}, // a run error is not a logout
		{"run error", is(runErr), func() { rep.RunErr, rep.Shell = nil, true }},
		{"masks replaced", as[*MasksReplacedError], func() { out.MaskEvents = nil }}, // a shell is not logged out
		{"collect", is(collectErr), func() { rep.Collected.Err = nil }},
		{"agent's exit", func(err error) bool { var ae *AgentExitError; return errors.As(err, &ae) && ae.Code == 5 }, func() { out.ExitCode = 0 }},
		{"nothing", func(err error) bool { return err == nil }, func() {}},
	}
	for _, s := range steps {
		if err := rep.Verdict(); !s.is(err) {
			t.Fatalf("%s: Verdict = %v", s.name, err)
		}
		s.next()
	}
}

// TestVerdictMessages: the verdicts' messages are the ones abox prints.
func TestVerdictMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&ExecChangeError{Changes: 2}, "the run changed 2 execution-adjacent file(s) or git setting(s), and run.on_exec_change is fail"},
		{&MasksReplacedError{Count: 1, Run: "r1"}, "the agent put something in place of 1 masked path(s) during run r1"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// TestTimeout: a run without --timeout gets the manifest's run.timeout; a shell gets none.
func TestTimeout(t *testing.T) {
	p := &project.Project{Config: config.Default(), Manifest: &manifest.Manifest{Run: manifest.Run{Timeout: 90}}}
	pre := &sandbox.Ready{RunSpec: &render.RunSpec{}}
	for _, tc := range []struct {
		o    Options
		want time.Duration
	}{
		{Options{}, 90 * time.Second},
		{Options{Timeout: time.Minute}, time.Minute},
		{Options{Shell: true}, 0},
	} {
		if got := sandboxOptions(p, pre, tc.o, nil, false, false).Timeout; got != tc.want {
			t.Errorf("timeout of %+v = %v, want %v", tc.o, got, tc.want)
		}
	}
}
