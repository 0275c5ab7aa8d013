package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/termtext"
)

// Exit statuses ([remedy]), documented in the root command's help.
const (
	ExitOK         = remedy.ExitOK
	ExitError      = remedy.ExitError
	ExitDoctor     = remedy.ExitDoctor
	ExitBoundary   = remedy.ExitBoundary
	ExitExecChange = remedy.ExitExecChange
)

const exitHelp = `Exit status:
  0  success
  1  error (the message says what and how to fix it)
  2  abox doctor found at least one failing check
  3  boundary refusal: the sandbox could not be verified, so no agent was started
  4  a run or shell changed an execution-adjacent file or the git state, and
     run.on_exec_change is fail (the summary lists the changes; this status wins
     over the agent's own)
Otherwise abox run and abox shell exit with the agent's status.`

// The exit statuses and hints are remedy's; these are the names cli's commands use.
var (
	withHint   = remedy.With
	errorf     = remedy.Errorf
	boundary   = remedy.Boundary
	silentExit = remedy.Silent
	hintOf     = remedy.HintOf
	exitStatus = remedy.Status
)

// interruptedError is an error a command ended with because it was interrupted (Ctrl-C,
// SIGTERM). It does not unwrap: the hint of the failure the interruption caused, such as "run
// `abox up` to create it" for a network inspect cut short, does not apply.
type interruptedError struct{ err error }

func (e *interruptedError) Error() string { return "interrupted: " + e.err.Error() }

// interrupted marks err as caused by ctx's end, unless it is an exit status or already says
// that the run was interrupted.
func interrupted(ctx context.Context, err error) error {
	if exit, _ := remedy.IsExit(err); ctx.Err() == nil || exit || errors.Is(err, sandbox.ErrInterrupted) {
		return err
	}
	return &interruptedError{err: err}
}

// report prints err in abox's one shape and returns the exit status:
//
//	error: <what went wrong>
//	  ↳ <the command or change that fixes it>
//
// Every line is escaped: an error may quote a workspace file name, a docker message or the
// agent's output.
func report(w io.Writer, err error) int {
	code, hint := exitStatus(err)
	if _, silent := remedy.IsExit(err); silent {
		return code
	}
	showDetails(w, err)
	var me *manifest.Error
	if errors.As(err, &me) {
		printProblems(w, me)
		if hint != "" && !allHinted(me) {
			linef(w, "  ↳ %s", hint)
		}
		return code
	}
	msg := strings.TrimSpace(err.Error())
	lines := strings.Split(msg, "\n")
	linef(w, "error: %s", lines[0])
	for _, l := range lines[1:] {
		linef(w, "  %s", l)
	}
	if hint != "" {
		linef(w, "  ↳ %s", hint)
	}
	return code
}

// showDetails prints what err carries for a person to read before it: the diff of a manifest
// changed since `abox up`, the log of a failed image build, the end of the log of a gateway
// that does not answer. Each is escaped or redacted where it was made: the agent can write the
// manifest and what a build or a server prints.
func showDetails(w io.Writer, err error) {
	var (
		unapproved *edit.UnapprovedError
		changed    *approval.ChangedError
		build      *images.BuildError
		refused    *images.Error
		up         *gateway.UpError
	)
	switch {
	case errors.As(err, &unapproved):
		changed = unapproved.Changed
	case errors.As(err, &changed):
	}
	if changed != nil {
		fmt.Fprintf(w, "%v:\n%s", changed, termtext.Text(changed.Diff))
	}
	if errors.As(err, &build) && !(errors.As(err, &refused) && refused.Refused) {
		fmt.Fprintf(w, "--- build log of %s ---\n%s--- end of build log ---\n", build.Tag, termtext.Text(build.Log))
	}
	if errors.As(err, &up) && up.Log != "" && errors.As(up, new(*gateway.UnhealthyError)) && !errors.As(up, new(*gateway.OpenError)) {
		fmt.Fprintf(w, "the last lines of %s's log:\n%s\n", gateway.Name(up.Profile), termtext.Text(up.Log))
	}
}

// printProblems prints a manifest's problems, escaped: they quote the file, which the agent
// can write.
func printProblems(w io.Writer, me *manifest.Error) {
	for _, p := range me.Problems {
		linef(w, "error: %s: %s: %s", me.Source, p.Loc, p.Msg)
		if p.Hint != "" {
			linef(w, "  ↳ %s", p.Hint)
		}
	}
}

func allHinted(me *manifest.Error) bool {
	for _, p := range me.Problems {
		if p.Hint == "" {
			return false
		}
	}
	return true
}
