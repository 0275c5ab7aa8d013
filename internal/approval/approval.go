package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/wsfile"
)

// ErrNotApproved is returned by [Load] when the project has no approved manifest: `abox up`
// has never run for it, or `abox nuke` removed its state.
var ErrNotApproved = errors.New("agentbox.yaml has not been approved by `abox up`")

// ErrCorrupt matches every [*CorruptError].
var ErrCorrupt = errors.New("the approved manifest is corrupt")

// CorruptError is an approved manifest that exists but cannot be trusted: it is not a regular
// file, cannot be read, or does not parse. Nothing can be compared with it.
type CorruptError struct {
	Path  string
	Parse bool // read, but does not parse or validate; else it could not be read as a regular file
	Err   error
}

func (e *CorruptError) Error() string {
	what := "cannot be read"
	if e.Parse {
		what = "does not parse"
	}
	return fmt.Sprintf("the approved manifest %s %s, so this one cannot be checked against it: %v", e.Path, what, e.Err)
}

// Is makes a CorruptError match [ErrCorrupt]. It does not unwrap: the cause is reported as
// part of one refusal, not as a problem of the workspace's agentbox.yaml.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Approval is a loaded approved manifest.
type Approval struct {
	Raw      []byte             // the file as recorded
	Manifest *manifest.Manifest // Raw, parsed and validated
}

// Load reads the approved manifest of project p. The error is [ErrNotApproved] when there is
// none, and a [*CorruptError] when there is one that cannot be trusted.
func Load(p paths.Project) (*Approval, error) {
	path := p.Approved()
	raw, err := wsfile.Read(path, manifest.MaxSize, false) // never through a symlink
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotApproved
	}
	if err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	m, err := manifest.Parse(raw, "approved manifest")
	if err != nil {
		return nil, &CorruptError{Path: path, Parse: true, Err: err}
	}
	return &Approval{Raw: raw, Manifest: m}, nil
}

// Approved returns the approved manifest of p, or nil when `abox up` has approved none. A
// corrupt approval is the [*CorruptError] of [Load], never taken for "nothing approved": the
// one rule every reader that falls back to the workspace's manifest (binding a project to its
// gateway, the secrets it requires) follows.
func Approved(p paths.Project) (*manifest.Manifest, error) {
	a, err := Load(p)
	switch {
	case errors.Is(err, ErrNotApproved):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return a.Manifest, nil
}

// Review is what approving a manifest would replace ([ReviewOf]).
type Review struct {
	// Corrupt is the [*CorruptError] of an approval that cannot be trusted: there is nothing
	// to compare with, so replacing it needs a person's consent like a widening, and is never
	// done silently.
	Corrupt error
	// Widening lists how the manifest reaches further than the approved one
	// ([manifest.Widening]); none on the first approval.
	Widening []string
}

// ReviewOf compares m with the approved manifest of p, for `abox up`: the first approval has
// nothing to review, a corrupt one is reported in Corrupt, and a sound one lists the widening.
// An error is returned only for what [Load] cannot classify.
func ReviewOf(p paths.Project, m *manifest.Manifest) (Review, error) {
	prev, err := Load(p)
	switch {
	case errors.Is(err, ErrNotApproved):
		return Review{}, nil
	case errors.Is(err, ErrCorrupt):
		return Review{Corrupt: err}, nil
	case err != nil:
		return Review{}, err
	}
	return Review{Widening: prev.Widening(m)}, nil
}

// Record writes raw as the approved manifest of p, atomically and privately. The caller has
// validated raw (it is the manifest just rendered from) and a person has approved it.
func Record(p paths.Project, raw []byte) error {
	return statefs.WriteFile(p.Approved(), raw, statefs.PrivateMode)
}

// Same reports whether m is the approved manifest. They are compared decoded, so comments and
// formatting do not count.
func (a *Approval) Same(m *manifest.Manifest) bool { return Same(a.Manifest, m) }

// Diff is a line diff from the approved manifest to raw, the workspace's ([manifest.LineDiff]).
func (a *Approval) Diff(raw []byte) string { return manifest.LineDiff(string(a.Raw), string(raw)) }

// Widening lists how m reaches further than the approved manifest ([manifest.Widening]).
func (a *Approval) Widening(m *manifest.Manifest) []string { return manifest.Widening(a.Manifest, m) }

// Same reports whether two manifests are equal decoded, as `abox run` compares them.
func Same(a, b *manifest.Manifest) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// ChangedError is a workspace manifest that differs from the approved one: the agent can write
// the workspace, so it could widen its own next run.
type ChangedError struct {
	Diff string // from the approved manifest to the workspace's
}

func (e *ChangedError) Error() string {
	return "agentbox.yaml changed since it was approved by `abox up`"
}

// Check is the gate of a run: the workspace manifest m (raw as read) must be the approved one.
// It returns [ErrNotApproved], a [*CorruptError], or a [*ChangedError] with the diff.
func Check(p paths.Project, m *manifest.Manifest, raw []byte) (*Approval, error) {
	a, err := Load(p)
	if err != nil {
		return nil, err
	}
	if !a.Same(m) {
		return a, &ChangedError{Diff: a.Diff(raw)}
	}
	return a, nil
}
