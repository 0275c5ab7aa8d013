package remedy

import (
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/secrets"
)

// Refusal names the fix of a run refused before anything started ([launch.Run],
// [launch.Spare]); runs is the project's runs index, which a run must be able to record into.
// The preflight's refusals get theirs from [sentinels]; a manifest changed since `abox up` is
// refused (exit 3), its diff shown by the caller first.
func Refusal(err error, runs string) error {
	var (
		changed *approval.ChangedError
		ae      *secrets.AttachedError
	)
	switch {
	case errors.As(err, &changed):
		return Boundary(With(&unapprovedRun{changed}, "review the change; `abox up` approves it"))
	case errors.As(err, new(*owner.RootOwnedError)):
		return Identity(err)
	case errors.As(err, &ae):
		n := ae.Missing.Needs[0]
		return With(err, fmt.Sprintf("store it with `abox secrets set %s`, or take it back with `abox secrets detach %s`", n.Secret, n.By))
	case errors.Is(err, sandbox.ErrUnrecordable):
		return With(err, "free space on the disk that holds "+runs)
	case errors.Is(err, sandbox.ErrNoBaseline):
		return With(err, "run `abox up`: it records the baseline before any agent runs")
	case errors.As(err, new(*sandbox.BaselineError)):
		return With(err, "run `abox doctor` to see what changed, then `abox doctor --accept-git --accept-watch` to record the baseline again")
	case errors.Is(err, launch.ErrNoCloneOwner):
		return Boundary(With(err, "run `abox render` to rewrite runspec.json"))
	case errors.Is(err, isolate.ErrOwner):
		return With(err, "run abox as root, or as the workspace's owner")
	case errors.Is(err, isolate.ErrNotRepository):
		return With(err, "run `git init` and commit in the project, or run without --isolated")
	case errors.Is(err, isolate.ErrNoCommit):
		return With(err, "commit something first: the clone starts from HEAD")
	}
	return Secrets(err) // what reading the attached secrets met, if that was it
}

// unapprovedRun is a run refused for a manifest changed since `abox up`. It unwraps to the
// change, whose diff cli shows above it.
type unapprovedRun struct{ changed *approval.ChangedError }

func (e *unapprovedRun) Error() string { return "refusing to run an unapproved manifest" }
func (e *unapprovedRun) Unwrap() error { return e.changed }

// Verdict gives the verdict of a run that happened ([launch.Report.Verdict]) its exit status
// and hint. The run's summary is printed by then.
func Verdict(err error) error {
	var (
		exec  *launch.ExecChangeError
		masks *launch.MasksReplacedError
		fe    *isolate.FinishError
		exit  *launch.AgentExitError
	)
	switch {
	case errors.As(err, &exec) && exec.Changes == 0:
		return Exit(ExitExecChange, With(err, "what lies past a bound is never compared: make what the summary names as capped smaller, or relax run.on_exec_change to warn (`abox up` asks about it)"))
	case errors.As(err, &exec):
		return Exit(ExitExecChange, With(err, "review them; `abox doctor --accept-watch` or `--accept-git` accepts the ones you want"))
	case errors.Is(err, sandbox.ErrBoundary):
		if HintOf(err) == "" {
			err = With(err, "run `abox doctor` to see what is wrong; `abox up` rebuilds what is missing")
		}
		return Boundary(err)
	case errors.As(err, &masks):
		return With(err, "read the run's summary above, or `abox logs --runs`; `abox doctor` names the quarantine")
	case errors.As(err, &fe):
		return finish(err, fe)
	case errors.As(err, &exit):
		return Silent(exit.Code)
	}
	return err
}

// finish names the fix of a failed step of [isolate.Repo.Finish].
func finish(err error, fe *isolate.FinishError) error {
	switch fe.Step {
	case isolate.StepDiscard:
		return With(err, fmt.Sprintf("run `abox discard %s`", fe.ID))
	case isolate.StepCollect:
		return With(err, fmt.Sprintf("the clone is kept in abox's state; `abox discard %s` removes it", fe.ID))
	}
	return With(err, fmt.Sprintf("run `abox diff %s`", fe.ID))
}

// Isolate names the fix of a refused review command of isolated run id ([isolate.Repo]).
func Isolate(err error, id string) error {
	switch {
	case errors.Is(err, isolate.ErrNotFound):
		return With(err, "check the run id: `abox diff` takes the id an isolated run printed")
	case errors.Is(err, isolate.ErrDirty):
		return With(err, fmt.Sprintf("commit or stash your changes, then run `abox merge %s` again", id))
	case errors.Is(err, isolate.ErrFlagged):
		return With(err, fmt.Sprintf("review them with `abox diff %s --patch`, then run `abox merge %s --force`", id, id))
	}
	return err
}
