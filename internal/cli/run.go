package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

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
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	pre, err := a.preflight(ctx, p)
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
	if err := checkRecordable(p.State.Runs()); err != nil {
		return err
	}
	scope, err := a.execScope(p, pre.RunSpec)
	if err != nil {
		return err
	}
	so := sandbox.Options{
		Prompt: opts.prompt, Resume: opts.resume, Continue: opts.cont, Keep: opts.keep, Shell: opts.shell,
		Timeout: opts.timeout, Masks: pre.RunSpec.Masks, MaskWalkLimit: p.Config.Limits.MaskWalk, SecretEnv: secretEnv, Gateway: pre.Gateway,
		Watch: scope,
	}
	if so.Timeout == 0 && !opts.shell {
		so.Timeout = time.Duration(p.Manifest.Run.Timeout) * time.Second
	}
	if !opts.quiet && !opts.shell {
		so.Output, so.Pretty = a.Out, a.TTY || a.OutTTY
	}
	out, runErr := sb.Run(ctx, so)
	if err := sb.Record(so, out, p.Manifest.Profile, p.Manifest.Run.PermissionMode, p.Manifest.Servers); err != nil {
		a.warnf("", "recording the run: %v", err)
	}
	a.printSummary(out, opts.shell, pre.RunSpec.OnExecChange)
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
	if out.ExitCode != 0 {
		return silentExit(out.ExitCode)
	}
	return nil
}

// checkRecordable refuses a run abox could not record ([sandbox.CheckRecordable]).
func checkRecordable(dir string) error {
	return withHint(sandbox.CheckRecordable(dir), "free space on the disk that holds "+dir)
}

// printSummary prints what happened in a run to stderr. Every line goes through linef: the
// session id, the names netd logged, the workspace files the run changed and the notes (the
// agent's last stderr line among them) come from the agent, which must not be able to rewrite
// the summary on the terminal.
func (a *App) printSummary(out *sandbox.Outcome, shell bool, onExecChange string) {
	w := a.Err
	kind := "run"
	if shell {
		kind = "shell"
	}
	head := fmt.Sprintf("%s %s · %s · exit %d · %.1fs", kind, out.ID, out.Result, out.ExitCode, out.Duration.Seconds())
	if out.Summary.SessionID != "" {
		head += " · session " + out.Summary.SessionID
	}
	fmt.Fprintln(w)
	linef(w, "%s", head)
	if out.Transcript != "" {
		linef(w, "  transcript: %s", out.Transcript)
	}
	if n := len(out.Summary.ToolCalls); n > 0 {
		linef(w, "  tool calls: %d", n)
	}
	if h := out.Harvest; h != nil {
		printMCPCalls(w, h.MCP)
		if u := h.ModelUsage(); u != nil {
			linef(w, "  model API: %s", u)
		}
		if d := h.DeniedNames(); len(d) > 0 {
			linef(w, "  denied DNS names: %s", formatCounts(d, 10))
		}
		if r := h.RefusedConnections(); len(r) > 0 {
			linef(w, "  refused connections (SNI/Host): %s", formatCounts(r, 10))
		}
		if n := h.Dropped(); n > 0 {
			linef(w, "  dropped packets: %d", n)
		}
		if d, r := h.DeniedNames(), h.RefusedConnections(); len(d)+len(r) > 0 {
			linef(w, "  ↳ review them with `abox egress list`; allow one with `abox egress add <host>`")
		}
		printLogCaps(w, "  ", out.ID, h.LogCaps())
	}
	printExec(w, out.Exec, onExecChange)
	for _, n := range out.Notes {
		linef(w, "  note: %s", n)
	}
	printMaskEvents(w, out.MaskEvents)
}
