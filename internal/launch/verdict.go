package launch

import (
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/sandbox"
)

// The refusals of [Run] that are its own; the others are those of sandbox, isolate and secrets,
// as they return them.
var (
	// ErrFromWorktree refuses to carry the worktree's changes into a run that has no clone.
	ErrFromWorktree = errors.New("--from-worktree needs --isolated")
	// ErrNoCloneOwner refuses an isolated run whose runspec names no agent to give the clone to:
	// the sandbox could not be verified.
	ErrNoCloneOwner = errors.New("runspec.json names no agent uid:gid to give the clone to")
	// ErrLoggedOut ends a headless run whose agent asked for /login: the login check passed, but
	// the login did not hold.
	ErrLoggedOut error = loggedOut{}
)

// loggedOut is [ErrLoggedOut]'s type: its message starts with a name, Claude Code.
type loggedOut struct{}

func (loggedOut) Error() string {
	return "Claude Code is not logged in for this project: the run ended asking for /login"
}

// ExecChangeError ends a run that changed what runs outside the sandbox (execution-adjacent
// files, git settings) when run.on_exec_change is fail.
type ExecChangeError struct {
	Changes int
	Capped  int // bounds the watch hit after the run: what lies past them was not compared
}

func (e *ExecChangeError) Error() string {
	switch {
	case e.Capped == 0:
		return fmt.Sprintf("the run changed %d execution-adjacent file(s) or git setting(s), and run.on_exec_change is fail", e.Changes)
	case e.Changes == 0:
		return fmt.Sprintf("the watch hit %d bound(s) after the run, past which nothing was compared, and run.on_exec_change is fail", e.Capped)
	}
	return fmt.Sprintf("the run changed %d execution-adjacent file(s) or git setting(s) and the watch hit %d bound(s), and run.on_exec_change is fail", e.Changes, e.Capped)
}

// MasksReplacedError ends a run whose agent put something in place of masked paths
// ([sandbox.Outcome.FailedMasks]).
type MasksReplacedError struct {
	Count int
	Run   string
}

func (e *MasksReplacedError) Error() string {
	return fmt.Sprintf("the agent put something in place of %d masked path(s) during run %s", e.Count, e.Run)
}

// AgentExitError is a run that went well but whose agent exited with a status other than 0;
// the run ends with that status.
type AgentExitError struct{ Code int }

func (e *AgentExitError) Error() string {
	return fmt.Sprintf("the agent exited with status %d", e.Code)
}

// Verdict is the error the run ends with, the first of, in this order:
//
//  1. an [*ExecChangeError]: first, so that nothing the agent prints (a login prompt) can trade
//     this status for another;
//  2. [ErrLoggedOut], for a headless run that ended asking for a login;
//  3. RunErr, the sandbox's own (a boundary refusal: [sandbox.ErrBoundary]);
//  4. a [*MasksReplacedError];
//  5. the isolated clone's collect ([*isolate.FinishError]);
//  6. an [*AgentExitError].
//
// nil when the run, its masks and its clone came through and the agent exited 0.
func (r *Report) Verdict() error {
	out := r.Outcome
	if x := out.Exec; x.Fails(r.OnExecChange) {
		return &ExecChangeError{Changes: len(x.Changes), Capped: x.Caps()}
	}
	if !r.Shell && r.RunErr == nil && sandbox.LoggedOut(out) {
		return ErrLoggedOut
	}
	if r.RunErr != nil {
		return r.RunErr
	}
	if n := out.FailedMasks(); n > 0 {
		return &MasksReplacedError{Count: n, Run: out.ID}
	}
	if r.Collected != nil && r.Collected.Err != nil {
		return r.Collected.Err
	}
	if out.ExitCode != 0 {
		return &AgentExitError{Code: out.ExitCode}
	}
	return nil
}
