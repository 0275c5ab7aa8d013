package approval

import (
	"errors"
	"path/filepath"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/statefs"
)

// InvalidEditError is an edit whose result does not validate; nothing was written.
type InvalidEditError struct{ Err error }

func (e *InvalidEditError) Error() string { return e.Err.Error() }
func (e *InvalidEditError) Unwrap() error { return e.Err }

// Edit applies edit to the workspace manifest m (raw as read) of project p, whose workspace is
// p.Workspace, re-validates the whole result and writes it atomically; fields and comments the
// edit does not touch are kept. It returns the new manifest and its bytes.
//
// An edit by the user on the host is an approval of exactly that edit, so the approved copy
// gets the same edit. To keep it exactly that edit, a workspace manifest that differs from its
// approval (the agent can write the workspace) is refused first with the [*ChangedError] of
// [Check], and a corrupt approval with its [*CorruptError]; a never-approved project is edited in
// the workspace only. A result that does not validate is an [*InvalidEditError]. The caller
// holds the project's lock.
func Edit(p paths.Project, m *manifest.Manifest, raw []byte, edit func(*manifest.Doc) error) (*manifest.Manifest, []byte, error) {
	_, err := Check(p, m, raw)
	hasApproval := !errors.Is(err, ErrNotApproved)
	if err != nil && hasApproval {
		return nil, nil, err
	}
	doc, err := manifest.ParseDoc(raw, manifest.FileName)
	if err != nil {
		return nil, nil, err
	}
	if err := edit(doc); err != nil {
		return nil, nil, err
	}
	next, err := doc.Manifest(manifest.FileName)
	if err != nil {
		return nil, nil, &InvalidEditError{Err: err}
	}
	out := doc.Bytes()
	if err := statefs.WriteFile(filepath.Join(p.Workspace, manifest.FileName), out, 0o644); err != nil {
		return nil, nil, err
	}
	if hasApproval {
		if err := Record(p, out); err != nil {
			return nil, nil, err
		}
	}
	return next, out, nil
}
