package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/watch"
)

// ErrNoBaseline refuses a run of a project whose baseline was never recorded.
var ErrNoBaseline = errors.New("the project has no baseline of the files that run outside the sandbox and of its git state, so no agent is started")

// BaselineError is a baseline that could not be read (a run is refused) or recorded.
type BaselineError struct {
	Recording bool // recording it (abox up) failed, rather than reading it (abox run)
	Err       error
}

func (e *BaselineError) Error() string {
	if e.Recording {
		return fmt.Sprintf("the baseline: %v", e.Err)
	}
	return e.Err.Error()
}
func (e *BaselineError) Unwrap() error { return e.Err }

// RunScope is what a run of the project watches, in the scope of rs; home expands ~/ in git
// include paths. A project without a baseline is refused ([ErrNoBaseline]): every comparison,
// the run's own included, would then start from whatever the workspace holds, which an earlier
// agent may have planted. A baseline that cannot be read is a [BaselineError].
func RunScope(proj paths.Project, home string, rs *render.RunSpec) (*watch.Scope, error) {
	b, err := watch.LoadBaseline(proj.Baselines())
	if err != nil {
		return nil, &BaselineError{Err: err}
	}
	if !b.Recorded() {
		return nil, ErrNoBaseline
	}
	scope := WatchScope(proj.Workspace, home, rs.Watch, rs.Masks)
	return &scope, nil
}

// Recorded is what [RecordBaseline] took: the snapshot, and which of its sections it recorded.
type Recorded struct {
	Snapshot   watch.Snapshot
	Git, Files bool
}

// RecordBaseline records the workspace as the project's baseline, at time ts, for the sections
// never recorded. A recorded section is left alone: `abox up` after a run must not accept what
// the run changed. A corrupt baseline is a [BaselineError], not replaced.
func RecordBaseline(proj paths.Project, home string, rs *render.RunSpec, ts string) (Recorded, error) {
	snap := watch.Take(WatchScope(proj.Workspace, home, rs.Watch, rs.Masks))
	git, files, err := watch.RecordInitial(proj.Baselines(), snap, ts)
	if err != nil {
		return Recorded{}, &BaselineError{Recording: true, Err: err}
	}
	return Recorded{Snapshot: snap, Git: git, Files: files}, nil
}

// ErrUnrecordable refuses a run abox could not record.
var ErrUnrecordable = errors.New("cannot record a run")

// CheckRecordable refuses to start a run abox could not record in dir: on a full disk the
// transcript and netd's logs, the run's audit trail, would be lost while the agent ran.
func CheckRecordable(dir string) error {
	probe := filepath.Join(dir, ".space-check")
	err := statefs.WriteFile(probe, make([]byte, 64<<10), statefs.PrivateMode)
	os.Remove(probe)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnrecordable, err)
	}
	return nil
}
