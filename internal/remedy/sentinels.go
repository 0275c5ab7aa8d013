package remedy

import (
	"errors"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/setup/pick"
)

// sentinels are the errors of domain packages that end abox with an exit status of their own,
// each with the hint [Status] prints when none was attached on the way up. A package returns the
// sentinel (or a type matching it); this table names the abox command that fixes it. The first
// match wins.
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
	{sandbox.ErrNotLoggedIn, ExitError, fixed(LoginHint)},
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
	// login. Its other refusals and its verdict are mapped in launch.go (Refusal, Verdict).
	{launch.ErrFromWorktree, ExitError, fixed("add --isolated: only an isolated run has a clone to carry the changes into")},
	{launch.ErrLoggedOut, ExitError, fixed(LoginHint)},
	// init's picker. (The editing and listing commands' typed errors carry fields for the hint
	// and are mapped by functions of their own: Edit, Egress, MCP.)
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

// LoginHint is the fix for a headless run refused or ended for want of a Claude login
// ([sandbox.ErrNotLoggedIn]).
const LoginHint = "run `abox shell` once and log Claude Code in there (`claude`, then /login); the login stays in the project's volume for every later run"
