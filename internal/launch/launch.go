package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/secrets"
)

// Env is what a run takes from the host. The caller wires it; the checks whose rules live with
// other commands (the daemon's, the MCP scope, the gateway's proof of its token, doctor's
// boundary checks) come in through Daemon and Preflight.
type Env struct {
	Docker  *docker.Client
	Project *project.Project
	// Preflight is the project's [sandbox.Preflight], with the caller's checks handed in. Its
	// Identity is set here, to the workspace owner's now, just before it runs.
	Preflight *sandbox.Preflight
	// Daemon checks that the docker daemon answers: the first check, while the preflight's
	// inspections are started ([sandbox.Preflight.Prefetch]).
	Daemon func(context.Context) error
	// Secrets reads the secrets attached to the agent ([secrets.Host.AgentEnv]); it is not used
	// when none is attached.
	Secrets *secrets.Host
	// Clones is the project's isolated runs, for a run on a private clone.
	Clones *isolate.Repo
	Home   string // $HOME, for ~ in git include paths
	Now    func() time.Time
	// Progress gets the run's progress lines (stderr); Warn its warnings, each with a hint or "".
	Progress io.Writer
	Warn     func(hint, format string, args ...any)
	// Executable is the running abox binary, run again in the background after a run to remove
	// the run's finished netd and start the next run's spare ([sandbox.SpawnAfterRun]); "" starts
	// none, and the run removes its netd itself.
	Executable string
	// Warden starts each run's warden ([sandbox.ProcessWarden] of the abox binary): a run
	// without one is refused.
	Warden sandbox.WardenFunc
}

// Options are one run's choices, as the user made them.
type Options struct {
	Prompt   string
	Resume   string
	Continue bool
	Keep     bool
	Shell    bool          // an interactive shell instead of claude -p
	Timeout  time.Duration // 0: the manifest's run.timeout (none for a shell)
	Output   io.Writer     // where the agent's events go; nil: quiet
	Pretty   bool          // events for a person rather than raw stream-json
	// Isolated runs the agent on a private clone (run.workspace: isolated makes every run of
	// the project isolated); FromWorktree carries the tracked uncommitted changes into it.
	Isolated, FromWorktree bool
}

// Report is what became of a run that started: its outcome, and for an isolated run what
// became of its clone.
type Report struct {
	Outcome   *sandbox.Outcome
	Collected *isolate.Result // nil unless the run was isolated
	Shell     bool
	// OnExecChange is the approved run.on_exec_change the verdict follows.
	OnExecChange string
	// RunErr is what [sandbox.Sandbox.Run] returned.
	RunErr error
}

// Run runs one sandbox for the project of env. First every check that may refuse it, in this
// order: the options, the daemon and the preflight, the attached secrets, the Claude login (not
// for a shell), room to record the run, the baseline of what a live run watches, the isolated
// clone. Then the run, and, whatever became of it, its record, the clone's collect and the next
// spare netd. A run refused before anything started returns no report, and the refusal. Once
// it ran, the report comes back with the run's verdict ([Report.Verdict]) as the error.
func Run(ctx context.Context, env Env, o Options) (*Report, error) {
	pl, err := prepare(ctx, env, o)
	if err != nil {
		return nil, err
	}
	rep := pl.run(ctx)
	return rep, rep.Verdict()
}

// Spare starts the project's netd for its next run ([sandbox.Sandbox.StartSpare]) after the
// same preflight as a run. It does nothing when config.yaml no longer asks for spare netds.
func Spare(ctx context.Context, env Env) error {
	p := env.Project
	if !p.Config.Defaults.SpareNetd { // turned off since the run that started this
		return nil
	}
	pre, err := preflight(ctx, env)
	if err != nil {
		return err
	}
	sb := &sandbox.Sandbox{Docker: env.Docker, Project: p.State, Spec: pre.RunSpec, Baseline: pre.Baseline, Now: env.Now}
	return sb.StartSpare(ctx, sandbox.Options{Gateway: pre.Gateway})
}

// plan is a run every check passed: nothing of it has started yet.
type plan struct {
	env   Env
	sb    *sandbox.Sandbox
	so    sandbox.Options
	rs    *render.RunSpec
	clone *isolate.Run // the isolated run's clone; nil for a live run
	// stopAhead ends what [sandbox.LookAhead] still asks, once the run no longer needs it.
	stopAhead func()
}

// prepare runs every check that may refuse the run, in order, then readies what the run needs:
// a spare netd it may no longer use is removed, an isolated run's clone made. No container has
// started when it returns an error.
func prepare(ctx context.Context, env Env, o Options) (_ *plan, err error) {
	p := env.Project
	isolated := o.Isolated || p.Manifest.Run.Workspace == manifest.WorkspaceIsolated
	if o.FromWorktree && !isolated {
		return nil, ErrFromWorktree
	}
	// A spare's inspection and read-back run beside the preflight; only a claim of that same
	// spare, after every check, takes them ([sandbox.LookAhead]).
	var ahead *sandbox.SpareAhead
	stopAhead := func() {}
	if p.Config.Defaults.SpareNetd && !isolated {
		ahead, stopAhead = sandbox.LookAhead(ctx, env.Docker, p.State)
	}
	defer func() {
		if err != nil {
			stopAhead()
		}
	}()
	pre, err := preflight(ctx, env) // the daemon's check first
	if err != nil {
		return nil, err
	}
	secretEnv, err := attachedEnv(ctx, env, pre.RunSpec)
	if err != nil {
		return nil, err
	}
	pl := &plan{env: env, rs: pre.RunSpec, so: sandboxOptions(p, pre, o, secretEnv, isolated, env.Executable != ""), sb: &sandbox.Sandbox{
		Docker: env.Docker, Project: p.State, Spec: pre.RunSpec, Baseline: pre.Baseline, Now: env.Now, Progress: env.Progress,
		Warden: env.Warden,
	}, stopAhead: stopAhead}
	pl.so.Ahead = ahead
	if !o.Shell {
		if err := pl.sb.CheckLogin(ctx, p.Manifest.EnvSecrets); err != nil {
			return nil, err
		}
	}
	// A run abox could not record is refused ([sandbox.CheckRecordable]).
	if err := sandbox.CheckRecordable(p.State.Runs()); err != nil {
		return nil, err
	}
	if err := reap(ctx, env); err != nil { // no orphan's agent runs beside this sandbox
		return nil, err
	}
	if !isolated { // an isolated run cannot change the workspace: its branch is reviewed instead
		if pl.so.Watch, err = sandbox.RunScope(p.State, env.Home, pre.RunSpec); err != nil {
			return nil, err
		}
	}
	if !pl.so.SpareNetd { // turned off since a run left one: it is not used, and does not idle on
		if err := pl.sb.RemoveSpare(ctx); err != nil {
			env.Warn("", "removing the spare netd an earlier run left: %v", err)
		}
	}
	if isolated {
		if pl.clone, err = startClone(ctx, env, pre.RunSpec, o.FromWorktree); err != nil {
			return nil, err
		}
		pl.so.ID, pl.so.Branch = pl.clone.ID, pl.clone.Branch
	}
	return pl, nil
}

// run runs the sandbox, then, whatever became of it (a refusal, an error, Ctrl-C), records the
// run, collects an isolated run's clone and starts the next run's spare netd.
func (pl *plan) run(ctx context.Context) *Report {
	env, p := pl.env, pl.env.Project
	out, runErr := pl.sb.Run(ctx, pl.so)
	defer pl.sb.Done(out) // until then, abox's death is its warden's cue
	pl.stopAhead()
	if err := pl.sb.Record(pl.so, out); err != nil {
		env.Warn("", "recording the run: %v", err)
	}
	rep := &Report{Outcome: out, Shell: pl.so.Shell, OnExecChange: pl.rs.OnExecChange, RunErr: runErr}
	if pl.clone != nil { // after the containers are gone, even on Ctrl-C
		rep.Collected = env.Clones.Finish(ctx, pl.clone, out.Result == "refused")
	}
	afterRun(env) // the finished netd's removal and the next run's netd, in the background
	if pl.so.Shell || sandbox.LoggedOut(out) {
		sandbox.ForgetLogin(p.State) // the shell may have logged in or out; the next run looks again
	}
	return rep
}

// preflight checks that the daemon answers, then runs the preflight: nothing starts unless the
// sandbox about to run is the approved one. The preflight's inspections are started at once,
// alongside the daemon's check ([sandbox.Preflight.Prefetch]); the checks still decide in their
// order. A manifest changed since `abox up` comes back as approval's *ChangedError.
func preflight(ctx context.Context, env Env) (*sandbox.Ready, error) {
	pf := env.Preflight
	stop := pf.Prefetch(ctx)
	defer stop()
	if err := env.Daemon(ctx); err != nil {
		return nil, err
	}
	id, err := env.Project.Identity() // root's workspace: the first thing to fix
	if err != nil {
		return nil, err
	}
	pf.Identity = id
	return pf.Run(ctx)
}

// sandboxOptions are the sandbox's options for a run of p after preflight pre.
// With retire, the run leaves its finished netd to the after-run process ([afterRun]).
func sandboxOptions(p *project.Project, pre *sandbox.Ready, o Options, secretEnv []byte, isolated, retire bool) sandbox.Options {
	so := sandbox.Options{
		Prompt: o.Prompt, Resume: o.Resume, Continue: o.Continue, Keep: o.Keep, Shell: o.Shell,
		Timeout: o.Timeout, Output: o.Output, Pretty: o.Pretty,
		Masks: pre.RunSpec.Masks, MaskWalkLimit: p.Config.Limits.MaskWalk, SecretEnv: secretEnv, Gateway: pre.Gateway,
		Isolated: isolated, SpareNetd: p.Config.Defaults.SpareNetd, Retire: retire, NetdImageID: pre.NetdImageID,
		Record: sandbox.RecordInfo{Profile: p.Manifest.Profile, PermissionMode: p.Manifest.Run.PermissionMode, Servers: p.Manifest.Servers},
	}
	if so.Timeout == 0 && !o.Shell {
		so.Timeout = time.Duration(p.Manifest.Run.Timeout) * time.Second
	}
	return so
}

// attachedEnv reads the secrets attached to the agent ([secrets.Host.AgentEnv]) and states, on
// every run, that the agent holds them ([secrets.Exposure]). nil when none is attached.
func attachedEnv(ctx context.Context, env Env, rs *render.RunSpec) ([]byte, error) {
	attached := env.Project.Manifest.EnvSecrets
	if len(attached) == 0 {
		return nil, nil
	}
	data, err := env.Secrets.AgentEnv(ctx, attached)
	if err != nil {
		return nil, err
	}
	if warning, hint := secrets.Exposure(attached, rs.Egress); warning != "" {
		env.Warn(hint, "%s", warning)
	}
	return data, nil
}

// startClone makes the run's clone from the user's HEAD, owned by the agent's uid. isolate's
// refusals (no repository, no commit, an owner abox cannot give the clone to) come back as they
// are; any other failure says it was making the clone.
func startClone(ctx context.Context, env Env, rs *render.RunSpec, fromWorktree bool) (*isolate.Run, error) {
	id, ok := rs.AgentIdentity()
	if !ok {
		return nil, ErrNoCloneOwner
	}
	run, err := env.Clones.Create(ctx, isolate.CreateOptions{
		ID: sandbox.NewRunID(), FromWorktree: fromWorktree, Mask: rs.Masks,
		Owner: &isolate.Account{UID: id.UID, GID: id.GID},
	})
	switch {
	case errors.Is(err, isolate.ErrOwner), errors.Is(err, isolate.ErrNotRepository), errors.Is(err, isolate.ErrNoCommit):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("making the run's clone: %w", err)
	}
	run.WriteStarted(env.Progress)
	return run, nil
}

// ErrReap refuses a run while an earlier run of the project, whose abox is gone, could not be
// finished: its agent may still run.
var ErrReap = errors.New("an earlier run of this project whose abox is gone could not be finished")

// reap finishes the project's runs whose abox and warden are both gone ([sandbox.Reap]),
// saying so for each.
func reap(ctx context.Context, env Env) error {
	reaped, err := sandbox.Reap(ctx, env.Docker, env.Project.State)
	for _, r := range reaped {
		switch {
		case r.Outcome == "":
			fmt.Fprintf(env.Progress, "removed what run %s had started: its abox died before its agent did\n", r.Run)
			continue
		case r.Recorded:
			fmt.Fprintf(env.Progress, "finished run %s, whose abox and warden were gone, and recorded it as %s (`abox logs --runs`)\n", r.Run, r.Outcome)
		default:
			fmt.Fprintf(env.Progress, "removed what was left of run %s, recorded already, whose abox and warden were gone\n", r.Run)
		}
		if r.Isolated {
			if _, err := env.Clones.Collect(ctx, r.Run); err != nil {
				env.Warn("see `abox diff "+r.Run+"`", "collecting the clone of run %s: %v", r.Run, err)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrReap, err)
	}
	return nil
}

// afterRun starts the after-run process ([sandbox.SpawnAfterRun]): it removes the netd the run
// retired and, when config.yaml asks for spare netds, starts the project's next one. When it
// cannot be started, the retired netd is removed here.
func afterRun(env Env) {
	if env.Executable == "" {
		return
	}
	err := sandbox.SpawnAfterRun(env.Executable, env.Project.State)
	if err == nil {
		return
	}
	env.Warn("", "starting the after-run process: %v; removing the run's netd now", err)
	if err := sandbox.RemoveRetired(context.Background(), env.Docker, env.Project.State); err != nil {
		env.Warn("remove it with `abox nuke`", "%v", err)
	}
}
