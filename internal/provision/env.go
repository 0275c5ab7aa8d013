package provision

import (
	"context"
	"errors"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// Env is what provisioning needs of the machine and of the person at it. The CLI fills it from
// its App; tests fill it with the fake docker CLI. Nothing here is a global.
type Env struct {
	Docker *docker.Client
	// Spec gathers everything rendering p depends on ([project.Project.Spec] with the host's
	// facts). It is called only when a render is due.
	Spec func(p *project.Project) (render.Spec, error)
	// Images builds Up's images; Gateway reconciles the profile's gateway in Up, and its
	// Manager removes a gateway no project needs in Nuke.
	Images  *images.Builder
	Gateway *gateway.Env
	// Executable is the running abox binary, which the netd image holds, and ExecutableSHA256
	// returns its sha256, which names that image; it is called only when the image is built.
	Executable       string
	ExecutableSHA256 func() string
	// Home is $HOME, for the watched files under it.
	Home string
	// Ready checks that the docker daemon answers; nil checks nothing.
	Ready func(context.Context) error
	// Confirm asks the person at the terminal a yes/no question; nil when there is none, and a
	// question that must be asked is then refused.
	Confirm func(question string) bool
	// Report is told each [Event] as it happens; nil drops them.
	Report func(Event)
	// Progress receives a line before each long step; nil discards them.
	Progress func(format string, args ...any)
	// Now dates the baseline; nil is time.Now.
	Now func() time.Time
}

func (e *Env) report(ev Event) {
	if e.Report != nil {
		e.Report(ev)
	}
}

func (e *Env) progressf(format string, args ...any) {
	if e.Progress != nil {
		e.Progress(format, args...)
	}
}

func (e *Env) ready(ctx context.Context) error {
	if e.Ready == nil {
		return nil
	}
	return e.Ready(ctx)
}

func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// approved asks the person to approve what Up showed: unasked is the refusal when there is
// nobody to ask, and [ErrDeclined] the one of a person who says no.
func (e *Env) approved(unasked error) error {
	switch {
	case e.Confirm == nil:
		return unasked
	case !e.Confirm("approve it?"):
		return ErrDeclined
	}
	return nil
}

// Event is something [Up], [Render] or [Nuke] reports as it happens; the caller words it.
type Event interface{ event() }

// Widened is a manifest that reaches further than the approved one, in each of Lines
// ([manifest.Widening]); Up asks before it goes on.
type Widened struct{ Lines []string }

// Replacing is an approval that cannot be trusted (Corrupt, an [*approval.CorruptError]):
// approving replaces it with the workspace's manifest as written. Up asks unless told yes.
type Replacing struct{ Corrupt error }

// Left is a project whose binding took it off Profile's gateway: that gateway serves what the
// project declared there until it is reconciled.
type Left struct{ Project, Profile string }

// Warned is a problem of writing the artifacts that does not stop the render, such as a review
// copy that could not be written.
type Warned struct{ Message string }

// NoContext is a mounts.context directory (Path, ~ expanded) that does not exist: runs fail
// until it does.
type NoContext struct{ Path string }

// Reconciled is what Up's reconciliation of the profile's gateway did.
type Reconciled struct{ Result *gateway.Result }

// Baselined is the baseline Up recorded, for the sections never recorded before.
type Baselined struct{ Recorded sandbox.Recorded }

// Unbound is a profile Nuke unbound the project from; it says whether that profile's gateway,
// which no project needed any more, was removed.
type Unbound struct{ gateway.Unbound }

// Removed is the end of Nuke's removals under the project's lock: Containers of Project's
// containers, its artifacts and its review copy are gone.
type Removed struct {
	Project    string
	Containers int
}

// Swept is Nuke's removal of the clones of Clones isolated runs.
type Swept struct{ Clones int }

// Reaped is a run whose abox and warden were gone, which Nuke finished and recorded before it
// removed the project's containers ([sandbox.Reap]).
type Reaped struct{ sandbox.Reaped }

func (Widened) event()    {}
func (Replacing) event()  {}
func (Left) event()       {}
func (Warned) event()     {}
func (NoContext) event()  {}
func (Reconciled) event() {}
func (Baselined) event()  {}
func (Unbound) event()    {}
func (Removed) event()    {}
func (Swept) event()      {}
func (Reaped) event()     {}

// ErrUnconfirmed refuses a widened manifest when there is nobody to ask and the caller did not
// say yes.
var ErrUnconfirmed = errors.New("the widened manifest was not approved")

// ErrDeclined is a person's no to approving the manifest.
var ErrDeclined = errors.New("not approved; nothing was changed")

// NotReplacedError refuses to replace a corrupt approval (Corrupt, an [*approval.CorruptError])
// when there is nobody to ask and the caller did not say yes. It unwraps to Corrupt, so it
// matches [approval.ErrCorrupt].
type NotReplacedError struct{ Corrupt error }

func (e *NotReplacedError) Error() string {
	return "the approved manifest was not replaced: " + e.Corrupt.Error()
}
func (e *NotReplacedError) Unwrap() error { return e.Corrupt }

// Step names a step whose failure the caller explains, in a [*StepError].
type Step int

// The steps of [Up], [Render] and [Nuke] a [*StepError] names.
const (
	StepRender   Step = iota + 1 // the manifest and configuration do not render
	StepImages                   // building the agent or netd image ([images.Builder])
	StepVolume                   // giving the ~/.claude volume to the agent ([sandbox.OwnClaudeVolume])
	StepGateway                  // reconciling the profile's gateway ([gateway.Reconcile])
	StepBaseline                 // recording the baseline ([sandbox.RecordBaseline])
	StepSpares                   // holding off a spare netd being started ([sandbox.HoldSpares])
	StepCaches                   // removing a toolchain cache's volume ([sandbox.RemoveCaches])
	StepClones                   // removing the clones of isolated runs ([isolate.Repo.Sweep])
)

// StepError is the error of a failed Step. It prints and unwraps as its cause.
type StepError struct {
	Step Step
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// failed wraps a step's error in a [*StepError]; nil stays nil.
func failed(step Step, err error) error {
	if err == nil {
		return nil
	}
	return &StepError{Step: step, Err: err}
}
