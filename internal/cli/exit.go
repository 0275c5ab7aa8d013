package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/setup/pick"
)

// Exit codes. They are documented in the root command's help.
const (
	ExitOK         = 0 // success
	ExitError      = 1 // any error
	ExitDoctor     = 2 // doctor found at least one failing check
	ExitBoundary   = 3 // the sandbox could not be verified; nothing was started
	ExitExecChange = 4 // a run changed what runs outside the sandbox, and run.on_exec_change is fail
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

// hinted attaches a hint naming the fix to an error.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// withHint returns err with hint attached; nil stays nil.
func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hinted{err: err, hint: hint}
}

// errorf is fmt.Errorf with a hint.
func errorf(hint, format string, args ...any) error {
	return &hinted{err: fmt.Errorf(format, args...), hint: hint}
}

// exitCode is an error that ends abox with a specific status. A nil err prints nothing.
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitCode) Unwrap() error { return e.err }

// boundary wraps err as a boundary refusal (exit 3).
func boundary(err error) error { return &exitCode{code: ExitBoundary, err: err} }

// sentinels are the errors of domain packages that cli maps to an exit status, each with the
// hint cli attaches when cli itself attached none. A package returns the sentinel (or a type
// matching it); only cli names the abox command that fixes it. The first match wins.
var sentinels = []struct {
	err  error
	code int
	hint func(error) string
}{
	{approval.ErrNotApproved, ExitBoundary, fixed("run `abox up` first: it builds the sandbox and approves the manifest")},
	{approval.ErrCorrupt, ExitBoundary, fixed("review agentbox.yaml; `abox up` approves it again")},
	{sandbox.ErrTampered, ExitBoundary, fixed("run `abox up` to render them again, and `abox doctor` to see what changed them")},
	{sandbox.ErrNoLoginCheck, ExitBoundary, fixed("run `abox up` to render it again")},
	{sandbox.ErrCredentialMissing, ExitBoundary, func(err error) string {
		return "store it with `abox secrets set " + refusalSubject(err) + "` (an API key, or the token `claude setup-token` prints)"
	}},
	{sandbox.ErrCredentialUnsafe, ExitBoundary, func(err error) string {
		return "keep it a regular file of mode 0600: `abox secrets set " + refusalSubject(err) + "` rewrites it"
	}},
	// The rest are not boundary refusals: the sandbox is sound, something is missing or moved.
	{sandbox.ErrNotLoggedIn, ExitError, fixed(loginHint)},
	{sandbox.ErrRunSpec, ExitError, fixed("run `abox up`")},
	{sandbox.ErrNoAgentUser, ExitError, fixed("run `abox up` to render it again")},
	{sandbox.ErrOwnerChanged, ExitError, func(err error) string {
		return "run `abox up` to rebuild the sandbox for " + refusalSubject(err)
	}},
	{sandbox.ErrCannotWrite, ExitError, fixed(doctor.CanWriteHint)},
	{sandbox.ErrNotRendered, ExitError, fixed("run `abox up`")},
	{sandbox.ErrUnverifiable, ExitError, fixed("run `abox up` to render them again")},
	{sandbox.ErrStale, ExitError, fixed("run `abox up` to render and build them")},
	{sandbox.ErrNetdPolicy, ExitError, fixed("run `abox up` to render it")},
	{sandbox.ErrGatewayDown, ExitError, fixed("run `abox up` to start it")},
	{sandbox.ErrGatewayAddress, ExitError, func(err error) string {
		return "recreate it with `abox gateway up --force " + refusalSubject(err) + "`"
	}},
	{sandbox.ErrImageMissing, ExitError, fixed("run `abox up` to build it")},
	{sandbox.ErrNetdBinary, ExitError, fixed("run `abox up` to rebuild it")},
	{sandbox.ErrNetworkMissing, ExitError, fixed("run `abox up` to create it")},
	{sandbox.ErrContextMissing, ExitError, fixed("create it, or remove it from mounts.context and run `abox up`")},
	// abox run and abox shell (launch): a run refused for its options, or ended for want of a
	// login. Its other refusals and its verdict are mapped in run.go (refusalHint, verdictError).
	{launch.ErrFromWorktree, ExitError, fixed("add --isolated: only an isolated run has a clone to carry the changes into")},
	{launch.ErrLoggedOut, ExitError, fixed(loginHint)},
	// init's picker. (The editing and listing commands map their typed errors, which carry
	// fields for the hint, in explain functions beside them: explainEdit, explainEgress, explainMCP.)
	{pick.ErrCancelled, ExitError, fixed("run `abox init` again when ready")},
	{pick.ErrInputEnded, ExitError, fixed("give one answer per line, as the prompts ask")},
}

func fixed(hint string) func(error) string { return func(error) string { return hint } }

// refusalSubject is what a [sandbox.Refusal] in err concerns.
func refusalSubject(err error) string {
	var r *sandbox.Refusal
	if errors.As(err, &r) {
		return r.Subject
	}
	return ""
}

// exitStatus is the status err ends abox with, and the hint to print under it: one cli
// attached, else the one of a sentinel above, else one a lower package's error carries.
func exitStatus(err error) (int, string) {
	code, hint := ExitError, ""
	var h *hinted
	if errors.As(err, &h) {
		hint = h.hint
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			code = s.code
			if hint == "" {
				hint = s.hint(err)
			}
			break
		}
	}
	if hint == "" {
		hint = hintOf(err)
	}
	var ec *exitCode
	if errors.As(err, &ec) {
		code = ec.code
	}
	return code, hint
}

// silentExit ends abox with code after the command already printed its report.
func silentExit(code int) error { return &exitCode{code: code} }

// hintOf returns the innermost hint attached to err, or one carried by a lower package's error.
func hintOf(err error) string {
	var h *hinted
	if errors.As(err, &h) {
		return h.hint
	}
	var hh interface{ HintText() string }
	if errors.As(err, &hh) {
		return hh.HintText()
	}
	return ""
}

// interruptedError is an error a command ended with because it was interrupted (Ctrl-C,
// SIGTERM). It does not unwrap: the hint of the failure the interruption caused, such as "run
// `abox up` to create it" for a network inspect cut short, does not apply.
type interruptedError struct{ err error }

func (e *interruptedError) Error() string { return "interrupted: " + e.err.Error() }

// interrupted marks err as caused by ctx's end, unless it is an exit status or already says
// that the run was interrupted.
func interrupted(ctx context.Context, err error) error {
	var ec *exitCode
	if ctx.Err() == nil || errors.As(err, &ec) || errors.Is(err, sandbox.ErrInterrupted) {
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
	var ec *exitCode
	if errors.As(err, &ec) && ec.err == nil {
		return code
	}
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
