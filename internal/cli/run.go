package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/watch"
)

type runOptions struct {
	dir     string
	resume  string
	cont    bool
	keep    bool
	quiet   bool
	timeout time.Duration
	shell   bool
	prompt  string
	// isolated runs the agent on a private clone (run.workspace: isolated, or --isolated);
	// fromWorktree carries the tracked uncommitted changes into it.
	isolated, fromWorktree bool
}

func newRunCmd(a *App) *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run PROMPT",
		Short: "Run Claude Code headless on a prompt in a fresh sandbox",
		Long: `Run starts a fresh sandbox and runs claude -p PROMPT in it, as the workspace owner in /workspace.

netd starts first and loads the network policy; abox reads the loaded ruleset back and compares
it with netpolicy.nft, and only then starts the agent, with no capabilities, in netd's network
namespace. Every line the agent prints is kept in the run's transcript. On a terminal, events are
shown as they come (session, assistant text, → tool calls, result), with every control character
the agent printed made visible; otherwise the raw stream-json goes to stdout.

Teardown always happens — on success, failure, timeout or Ctrl-C: netd's logs are harvested
from netd, the run is recorded in runs.jsonl, a summary is printed and both containers are
removed (unless --keep). Then abox snapshots the files that run outside the sandbox (CI, make,
package scripts, editor tasks, .claude/, the manifest) and git's dangerous settings and hooks
again, as it did before netd started, and the summary lists what the run changed; a project
with no baseline of them (abox up records it) is refused before anything starts.

With --isolated (or run.workspace: isolated in agentbox.yaml) the agent works in a private git
clone of the project, on a new branch abox/<run> from HEAD (--from-worktree also carries the
tracked uncommitted changes); your checkout and its .git are not mounted at all. After the run
abox commits what the agent left uncommitted and fetches the branch into your repository,
running nothing of the clone; nothing touches your working tree until abox merge <run>. Review
with abox diff <run>, drop with abox discard <run>. Several isolated runs of a project can run
at once, each with its own netd, agent and clone.

The exit status is the agent's; 3 when the sandbox could not be verified (no agent was
started); 4 when the run changed any of those files or settings and run.on_exec_change is fail.

Claude Code must be logged in: a project whose ~/.claude volume holds no login (and whose agent
gets no ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN) is refused before anything starts; run
abox shell once to log in. Sessions are kept in that volume, per project: --continue and
--resume ID (ids in abox logs --runs) pick up an earlier run's conversation.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.prompt = args[0]
			return runSandbox(c.Context(), a, opts)
		},
	}
	addDirFlag(cmd, &opts.dir)
	f := cmd.Flags()
	f.StringVar(&opts.resume, "resume", "", "resume the Claude session with this id (see `abox logs --runs`)")
	f.BoolVar(&opts.cont, "continue", false, "continue the most recent Claude session of this project")
	f.BoolVar(&opts.keep, "keep", false, "keep both containers after the run, for inspection")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "print only the summary")
	f.DurationVar(&opts.timeout, "timeout", 0, "stop the agent after this long (default: run.timeout of the manifest)")
	f.BoolVar(&opts.isolated, "isolated", false, "run on a private clone on branch abox/<run>; review with `abox diff <run>`")
	f.BoolVar(&opts.fromWorktree, "from-worktree", false, "with --isolated: carry the tracked uncommitted changes into the clone")
	return cmd
}

func newShellCmd(a *App) *cobra.Command {
	opts := runOptions{shell: true}
	cmd := &cobra.Command{
		Use:   "shell",
		Short: "Open an interactive shell in a fresh sandbox (use it once for the Claude login)",
		Long: `Shell starts the same sandbox as run — netd verified first, the agent with no
capabilities — but with an interactive bash on your terminal instead of claude -p. Use it once
per project to log Claude Code in: the login is kept in the project's ~/.claude volume for
later runs. Teardown and log harvest are the same as for run.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSandbox(c.Context(), a, opts) },
	}
	addDirFlag(cmd, &opts.dir)
	cmd.Flags().BoolVar(&opts.keep, "keep", false, "keep both containers after the shell exits")
	return cmd
}

func runSandbox(ctx context.Context, a *App, opts runOptions) error {
	if opts.shell && !a.TTY {
		return errorf("run `abox shell` from a terminal", "abox shell needs a terminal")
	}
	if err := checkResume(opts); err != nil {
		return err
	}
	p, err := a.loadProject(opts.dir)
	if err != nil {
		return err
	}
	if err := checkIsolated(p, &opts); err != nil {
		return err
	}
	pre, err := a.preflight(ctx, p) // the daemon's check first
	if err != nil {
		return err
	}
	secretEnv, err := a.attachedEnv(ctx, p)
	if err != nil {
		return err
	}
	sb := &sandbox.Sandbox{
		Docker: a.docker(), Project: p.State, Spec: pre.RunSpec, Baseline: pre.Baseline,
		Now: a.Now, Progress: a.Err,
	}
	if !opts.shell {
		if err := sb.CheckLogin(ctx, p.Manifest.EnvSecrets); err != nil {
			return err
		}
	}
	// A run abox could not record is refused ([sandbox.CheckRecordable]).
	if err := withHint(sandbox.CheckRecordable(p.State.Runs()), "free space on the disk that holds "+p.State.Runs()); err != nil {
		return err
	}
	var scope *watch.Scope
	if !opts.isolated { // an isolated run cannot change the workspace: its branch is reviewed instead
		if scope, err = a.execScope(p, pre.RunSpec); err != nil {
			return err
		}
	}
	so := sandbox.Options{
		Prompt: opts.prompt, Resume: opts.resume, Continue: opts.cont, Keep: opts.keep, Shell: opts.shell,
		Timeout: opts.timeout, Masks: pre.RunSpec.Masks, MaskWalkLimit: p.Config.Limits.MaskWalk, SecretEnv: secretEnv, Gateway: pre.Gateway,
		Watch: scope, Isolated: opts.isolated, SpareNetd: p.Config.Defaults.SpareNetd,
	}
	if !so.SpareNetd { // turned off since a run left one: it is not used, and does not idle on
		if err := sb.RemoveSpare(ctx); err != nil {
			a.warnf("", "removing the spare netd an earlier run left: %v", err)
		}
	}
	if so.Timeout == 0 && !opts.shell {
		so.Timeout = time.Duration(p.Manifest.Run.Timeout) * time.Second
	}
	if !opts.quiet && !opts.shell {
		so.Output, so.Pretty = a.Out, a.TTY || a.OutTTY
	}
	var repo *isolate.Repo
	var clone *isolate.Run
	if opts.isolated {
		if repo, clone, err = a.startIsolated(ctx, p, pre.RunSpec, opts); err != nil {
			return err
		}
		so.ID, so.Branch = clone.ID, clone.Branch
	}
	out, runErr := sb.Run(ctx, so)
	if err := sb.Record(so, out, p.Manifest.Profile, p.Manifest.Run.PermissionMode, p.Manifest.Servers); err != nil {
		a.warnf("", "recording the run: %v", err)
	}
	var collected *isolate.Result
	var collectErr error
	if clone != nil { // after the containers are gone, even on Ctrl-C
		collected = repo.Finish(ctx, clone, out.Result == "refused")
		collectErr = finishHint(collected.Err, clone.ID)
	}
	a.startSpare(p) // the next run's netd, in the background
	a.printSummary(out, opts.shell, pre.RunSpec.OnExecChange)
	collected.WriteSummary(a.Err)
	if opts.shell || sandbox.LoggedOut(out) {
		sandbox.ForgetLogin(p.State) // the shell may have logged in or out; the next run looks again
	}
	// First, so that nothing the agent prints (a login prompt) can trade this status for another.
	if err := execVerdict(out.Exec, pre.RunSpec.OnExecChange); err != nil {
		return err
	}
	if !opts.shell && runErr == nil && sandbox.LoggedOut(out) {
		return errorf(loginHint, "Claude Code is not logged in for this project: the run ended asking for /login")
	}
	if runErr != nil {
		if errors.Is(runErr, sandbox.ErrBoundary) && hintOf(runErr) == "" {
			runErr = withHint(runErr, "run `abox doctor` to see what is wrong; `abox up` rebuilds what is missing")
		}
		if errors.Is(runErr, sandbox.ErrBoundary) {
			return boundary(runErr)
		}
		return runErr
	}
	if err := maskFailure(out); err != nil {
		return err
	}
	if collectErr != nil {
		return collectErr
	}
	if out.ExitCode != 0 {
		return silentExit(out.ExitCode)
	}
	return nil
}

// printSummary prints what happened in a run to stderr ([sandbox.Summary]).
func (a *App) printSummary(out *sandbox.Outcome, shell bool, onExecChange string) {
	sandbox.Summary{Outcome: out, Shell: shell, OnExecChange: onExecChange, ExecExit: ExitExecChange}.WriteText(a.Err)
}

// maskFailure is the error of a run whose agent put something in place of a masked path.
func maskFailure(out *sandbox.Outcome) error {
	if n := out.FailedMasks(); n > 0 {
		return errorf("read the run's summary above, or `abox logs --runs`; `abox doctor` names the quarantine",
			"the agent put something in place of %d masked path(s) during run %s", n, out.ID)
	}
	return nil
}

// loginHint is the fix for a headless run refused or ended for want of a Claude login
// ([sandbox.ErrNotLoggedIn]).
const loginHint = "run `abox shell` once and log Claude Code in there (`claude`, then /login); the login stays in the project's volume for every later run"

// sessionIDRe is what --resume accepts: Claude Code's session ids are UUIDs; nothing that
// could read as a flag.
var sessionIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

func checkResume(opts runOptions) error {
	switch {
	case opts.resume != "" && opts.cont:
		return errorf("pass one of them", "--resume and --continue both pick the session to continue")
	case opts.resume != "" && !sessionIDRe.MatchString(opts.resume):
		return errorf("list the sessions of past runs with `abox logs --runs`", "--resume %q is not a session id", opts.resume)
	}
	return nil
}

// checkIsolated completes opts from the manifest: run.workspace: isolated makes every run and
// shell of the project isolated (issue 21: /workspace is a private clone, collected into the
// user's repository as branch abox/<id> once the run's containers are gone).
func checkIsolated(p *project.Project, opts *runOptions) error {
	if p.Manifest.Run.Workspace == manifest.WorkspaceIsolated {
		opts.isolated = true
	}
	if opts.fromWorktree && !opts.isolated {
		return errorf("add --isolated: only an isolated run has a clone to carry the changes into",
			"--from-worktree needs --isolated")
	}
	return nil
}

// startIsolated makes the run's clone, owned by the agent's uid, from the user's HEAD.
func (a *App) startIsolated(ctx context.Context, p *project.Project, rs *render.RunSpec, opts runOptions) (*isolate.Repo, *isolate.Run, error) {
	id, ok := rs.AgentIdentity()
	if !ok {
		return nil, nil, boundary(errorf("run `abox render` to rewrite runspec.json", "runspec.json names no agent uid:gid to give the clone to"))
	}
	repo := isolateRepoOf(p)
	run, err := repo.Create(ctx, isolate.CreateOptions{
		ID: sandbox.NewRunID(), FromWorktree: opts.fromWorktree, Mask: rs.Masks,
		Owner: &isolate.Account{UID: id.UID, GID: id.GID},
	})
	switch {
	case errors.Is(err, isolate.ErrOwner):
		return nil, nil, withHint(err, "run abox as root, or as the workspace's owner")
	case errors.Is(err, isolate.ErrNotRepository):
		return nil, nil, withHint(err, "run `git init` and commit in the project, or run without --isolated")
	case errors.Is(err, isolate.ErrNoCommit):
		return nil, nil, withHint(err, "commit something first: the clone starts from HEAD")
	case err != nil:
		return nil, nil, fmt.Errorf("making the run's clone: %w", err)
	}
	run.WriteStarted(a.Err)
	return repo, run, nil
}

// finishHint names the fix of a failed step of [isolate.Repo.Finish].
func finishHint(err error, id string) error {
	var fe *isolate.FinishError
	if !errors.As(err, &fe) {
		return err
	}
	switch fe.Step {
	case isolate.StepDiscard:
		return withHint(err, fmt.Sprintf("run `abox discard %s`", id))
	case isolate.StepCollect:
		return withHint(err, fmt.Sprintf("the clone is kept in abox's state; `abox discard %s` removes it", id))
	}
	return withHint(err, fmt.Sprintf("run `abox diff %s`", id))
}
