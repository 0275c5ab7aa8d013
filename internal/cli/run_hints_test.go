package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/secrets"
)

// TestRunHints: what `abox run` prints and exits with for each refusal and verdict of
// [launch.Run], which only cli explains.
func TestRunHints(t *testing.T) {
	p := &project.Project{State: paths.Project{Dir: "/state/p"}}
	attached := &secrets.AttachedError{Missing: &secrets.MissingError{Needs: []secrets.Need{{Secret: "acme.token", Kind: "env", By: "ACME_TOKEN"}}}}
	refusals := []struct {
		name string
		err  error
		want string
		code int
	}{
		{"from-worktree", launch.ErrFromWorktree,
			"error: --from-worktree needs --isolated\n  ↳ add --isolated: only an isolated run has a clone to carry the changes into\n", ExitError},
		{"manifest changed", &approval.ChangedError{Diff: "- egress: [a]\n+ egress: [b]\n"},
			"agentbox.yaml changed since it was approved by `abox up`:\n- egress: [a]\n+ egress: [b]\n" +
				"error: refusing to run an unapproved manifest\n  ↳ review the change; `abox up` approves it\n", ExitBoundary},
		{"attached secret missing", attached,
			"error: attached secrets are not in the secrets store: acme.token (env ACME_TOKEN)\n" +
				"  ↳ store it with `abox secrets set acme.token`, or take it back with `abox secrets detach ACME_TOKEN`\n", ExitError},
		{"not logged in", &sandbox.NotLoggedInError{Volume: "v"},
			"error: Claude Code is not logged in for this project: volume v holds no login\n  ↳ " + remedy.LoginHint + "\n", ExitError},
		{"unrecordable", fmt.Errorf("%w: disk full", sandbox.ErrUnrecordable),
			"error: cannot record a run: disk full\n  ↳ free space on the disk that holds /state/p/runs\n", ExitError},
		{"no baseline", sandbox.ErrNoBaseline,
			"error: " + sandbox.ErrNoBaseline.Error() + "\n  ↳ run `abox up`: it records the baseline before any agent runs\n", ExitError},
		{"corrupt baseline", &sandbox.BaselineError{Err: errors.New("baselines.json: unexpected end of JSON input")},
			"error: baselines.json: unexpected end of JSON input\n" +
				"  ↳ run `abox doctor` to see what changed, then `abox doctor --accept-git --accept-watch` to record the baseline again\n", ExitError},
		{"no clone owner", launch.ErrNoCloneOwner,
			"error: runspec.json names no agent uid:gid to give the clone to\n  ↳ run `abox render` to rewrite runspec.json\n", ExitBoundary},
		{"not a repository", fmt.Errorf("the project /p is %w: an isolated run clones it", isolate.ErrNotRepository),
			"error: the project /p is " + isolate.ErrNotRepository.Error() + ": an isolated run clones it\n" +
				"  ↳ run `git init` and commit in the project, or run without --isolated\n", ExitError},
		{"no commit", isolate.ErrNoCommit,
			"error: " + isolate.ErrNoCommit.Error() + "\n  ↳ commit something first: the clone starts from HEAD\n", ExitError},
		{"clone owner", isolate.ErrOwner,
			"error: " + isolate.ErrOwner.Error() + "\n  ↳ run abox as root, or as the workspace's owner\n", ExitError},
		{"clone failed", fmt.Errorf("making the run's clone: %w", errors.New("git clone: exit 128")),
			"error: making the run's clone: git clone: exit 128\n", ExitError},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := report(&b, remedy.Refusal(tc.err, p.State.Runs())); code != tc.code || b.String() != tc.want {
				t.Errorf("refusal %v: exit %d, printed\n%s\nwant exit %d,\n%s", tc.err, code, &b, tc.code, tc.want)
			}
		})
	}

	verdicts := []struct {
		name string
		err  error
		want string
		code int
	}{
		{"exec change", &launch.ExecChangeError{Changes: 1},
			"error: the run changed 1 execution-adjacent file(s) or git setting(s), and run.on_exec_change is fail\n" +
				"  ↳ review them; `abox doctor --accept-watch` or `--accept-git` accepts the ones you want\n", ExitExecChange},
		{"logged out", launch.ErrLoggedOut,
			"error: Claude Code is not logged in for this project: the run ended asking for /login\n  ↳ " + remedy.LoginHint + "\n", ExitError},
		{"boundary", fmt.Errorf("%w: starting netd: exit 125", sandbox.ErrBoundary),
			"error: sandbox not verified: starting netd: exit 125\n  ↳ run `abox doctor` to see what is wrong; `abox up` rebuilds what is missing\n", ExitBoundary},
		{"boundary with its own hint", &sandbox.RuntimeError{Runtime: "runsc", Problem: "is not registered", Hint: "register gVisor"},
			"", ExitBoundary},
		{"run failed", errors.New("creating the run directory: read-only file system"),
			"error: creating the run directory: read-only file system\n", ExitError},
		{"masks replaced", &launch.MasksReplacedError{Count: 2, Run: "r1"},
			"error: the agent put something in place of 2 masked path(s) during run r1\n" +
				"  ↳ read the run's summary above, or `abox logs --runs`; `abox doctor` names the quarantine\n", ExitError},
		{"discard failed", &isolate.FinishError{ID: "r1", Step: isolate.StepDiscard, Err: errors.New("busy")},
			"error: removing the clone of refused run r1: busy\n  ↳ run `abox discard r1`\n", ExitError},
		{"collect failed", &isolate.FinishError{ID: "r1", Step: isolate.StepCollect, Err: errors.New("busy")},
			"error: collecting isolated run r1: busy\n  ↳ the clone is kept in abox's state; `abox discard r1` removes it\n", ExitError},
		{"diff failed", &isolate.FinishError{ID: "r1", Step: "diff", Err: errors.New("busy")},
			"error: listing what run r1 changed: busy\n  ↳ run `abox diff r1`\n", ExitError},
		{"agent's exit", &launch.AgentExitError{Code: 7}, "", 7},
	}
	for _, tc := range verdicts {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			code := report(&b, remedy.Verdict(tc.err))
			if tc.name == "boundary with its own hint" { // the sandbox's hint stays
				tc.want = "error: " + tc.err.Error() + "\n  ↳ register gVisor\n"
			}
			if code != tc.code || b.String() != tc.want {
				t.Errorf("verdict %v: exit %d, printed\n%s\nwant exit %d,\n%s", tc.err, code, &b, tc.code, tc.want)
			}
		})
	}
}

// explicitExit is the exit status err carries of its own ([remedy.Exit]), or -1 when it
// carries none (a sentinel's status alone is not one).
func explicitExit(err error) int {
	if exit, _ := remedy.IsExit(err); !exit {
		return -1
	}
	code, _ := exitStatus(err)
	return code
}
