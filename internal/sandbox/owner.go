package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/statefs"
)

// ownersDir, in the project's state directory, holds one lock file per run that may still have
// containers: <id>.lock, taken by the abox that runs it before any container of the run exists,
// shared with the run's warden (which inherits it), and removed once the run is done with. A
// file there that nobody holds locked names a run whose abox and warden are both gone: an
// orphan ([Orphans]).
const ownersDir = "owners"

// ownerPath is the owner lock of run id.
func ownerPath(proj paths.Project, id string) string {
	return filepath.Join(proj.Dir, ownersDir, id+".lock")
}

// own takes the run's owner lock and makes its directory. The lock stays held in out.owner until
// [Sandbox.Done]; a fresh run's lock cannot be held by anyone else.
func (s *Sandbox) own(out *Outcome) error {
	f, err := lockOwner(s.Project, out.ID)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.Project.Runs(), out.Started.UTC().Format("20060102T150405Z")+"-"+out.ID)
	if err := statefs.MkdirAll(dir); err != nil {
		disown(s.Project, out.ID, f)
		return err
	}
	out.owner, out.Dir = f, dir
	return nil
}

// lockOwner creates and takes run id's owner lock. It is locked under a name of its own before
// it is linked in place, so that no [Reap] can find it unheld for an instant.
func lockOwner(proj paths.Project, id string) (*os.File, error) {
	dir := filepath.Join(proj.Dir, ownersDir)
	if err := statefs.MkdirAll(dir); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if err := flock(f, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking run %s's owner lock: %w", id, err)
	}
	if err := os.Link(f.Name(), ownerPath(proj, id)); err != nil {
		f.Close()
		return nil, fmt.Errorf("run %s's owner lock: %w", id, err)
	}
	return f, nil
}

// disown removes the run's owner lock and releases it: nothing of the run is left to end.
func disown(proj paths.Project, id string, f *os.File) {
	if f == nil {
		return
	}
	os.Remove(ownerPath(proj, id))
	flock(f, unix.LOCK_UN)
	f.Close()
}

// unheldOwners returns the runs of the project whose owner lock nobody holds, each with that
// lock now taken by the caller (who must release it with disown, or close it). A lock file
// removed while it was being taken is not returned.
func unheldOwners(proj paths.Project) (map[string]*os.File, error) {
	entries, err := os.ReadDir(filepath.Join(proj.Dir, ownersDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]*os.File{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || !validRunID(id) {
			continue
		}
		if f := takeUnheld(ownerPath(proj, id)); f != nil {
			out[id] = f
		}
	}
	return out, nil
}

// takeUnheld takes the lock at path if nobody holds it, and it is still the file at path once
// taken (not one its owner removed meanwhile); nil otherwise.
func takeUnheld(path string) *os.File {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	if flock(f, unix.LOCK_EX) != nil {
		f.Close()
		return nil
	}
	var held, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
		flock(f, unix.LOCK_UN)
		f.Close()
		return nil
	}
	return f
}

// ownerHeld reports whether run id's owner lock exists and someone holds it: its abox or its
// warden is alive.
func ownerHeld(proj paths.Project, id string) bool {
	f, err := os.OpenFile(ownerPath(proj, id), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if flock(f, unix.LOCK_SH) != nil {
		return true
	}
	flock(f, unix.LOCK_UN)
	return false
}

// ownerExists reports whether run id has an owner lock file: it is a run, not a spare.
func ownerExists(proj paths.Project, id string) bool {
	_, err := os.Lstat(ownerPath(proj, id))
	return err == nil
}
