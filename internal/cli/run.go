package cli

import (
	"context"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/sandbox"
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
	lo := launch.Options{
		Prompt: opts.prompt, Resume: opts.resume, Continue: opts.cont, Keep: opts.keep, Shell: opts.shell,
		Timeout: opts.timeout, Isolated: opts.isolated, FromWorktree: opts.fromWorktree,
	}
	if !opts.quiet && !opts.shell {
		lo.Output, lo.Pretty = a.Out, a.TTY || a.OutTTY
	}
	rep, err := launch.Run(ctx, a.launchEnv(p), lo)
	if rep == nil {
		return remedy.Refusal(err, p.State.Runs())
	}
	a.printSummary(rep.Outcome, opts.shell, rep.OnExecChange)
	rep.Collected.WriteSummary(a.Err)
	return remedy.Verdict(err)
}

// launchEnv is what [launch.Run] and [launch.Spare] take of this host for p.
func (a *App) launchEnv(p *project.Project) launch.Env {
	return launch.Env{
		Docker: a.docker(), Project: p, Preflight: a.preflightOf(p), Daemon: a.requireDaemon,
		Secrets: a.secretsHostAt(p.Paths), Clones: p.Isolated(), Home: a.getenv("HOME"),
		Now: a.Now, Progress: a.Err, Warn: a.warnf, Executable: a.Executable, Warden: sandbox.ProcessWarden(a.Executable),
	}
}

// printSummary prints what happened in a run to stderr ([sandbox.Summary]).
func (a *App) printSummary(out *sandbox.Outcome, shell bool, onExecChange string) {
	sandbox.Summary{Outcome: out, Shell: shell, OnExecChange: onExecChange, ExecExit: ExitExecChange}.WriteText(a.Err)
}

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
