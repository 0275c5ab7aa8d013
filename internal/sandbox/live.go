package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aboxhq/abox/internal/statefs"
)

// liveWait is how long a starting sandbox waits for another one of the project to finish its
// mask walk.
const liveWait = time.Minute

// liveHint is the hint of a sandbox refused because another one is live.
const liveHint = "wait for it to end (`abox logs --runs` lists runs), or give each agent its own checkout: a git worktree is a project of its own"

// liveLock is how the sandboxes of one project know of each other. Every sandbox holds
// live.lock from before its mask walk until teardown has checked the masks: exclusively while
// it walks alone, then shared if it masks nothing. A sandbox that masks something keeps it
// exclusively, and also holds live.lock.masks, which tells a starting sandbox to give up at
// once rather than wait for the walk to end. So while a sandbox with masks walks, mounts and
// checks, no other agent of the project runs.
type liveLock struct {
	live, masks *os.File
	shared      bool
}

// lockLive takes live.lock: exclusively when no other sandbox of the project is live, shared
// when the live ones mask nothing, after waiting up to [liveWait] for one that is still
// walking. It fails when a sandbox that masks something is live.
func lockLive(path string) (*liveLock, error) {
	if err := statefs.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	l := &liveLock{}
	var err error
	if l.live, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, statefs.PrivateMode); err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if l.masks, err = os.OpenFile(path+".masks", os.O_RDWR|os.O_CREATE, statefs.PrivateMode); err != nil {
		l.live.Close()
		return nil, fmt.Errorf("opening %s.masks: %w", path, err)
	}
	err = flock(l.live, unix.LOCK_EX)
	if err == nil {
		return l, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		l.unlock()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := l.share(); err != nil {
		l.unlock()
		return nil, err
	}
	return l, nil
}

// share waits for a shared hold of live.lock, giving up when a sandbox that masks something
// holds it.
func (l *liveLock) share() error {
	deadline := time.Now().Add(liveWait)
	for {
		if flock(l.live, unix.LOCK_SH) == nil {
			l.shared = true
			return nil
		}
		if l.masking() {
			return maskErr(liveHint, "another sandbox of this project is live, and it masks paths of this workspace: this one's agent could move them")
		}
		if time.Now().After(deadline) {
			return maskErr(liveHint, "another sandbox of this project has been starting for %s", liveWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// masking reports whether a live sandbox of the project masks something.
func (l *liveLock) masking() bool {
	if flock(l.masks, unix.LOCK_SH) == nil {
		flock(l.masks, unix.LOCK_UN)
		return false
	}
	return true
}

// settle adapts the lock to what the walk found: a sandbox that masks something must hold it
// alone, and says so; one that masks nothing lets others share it.
func (l *liveLock) settle(masks bool) error {
	switch {
	case masks && l.shared:
		return errors.New("another sandbox is live")
	case masks:
		for i := 0; ; i++ { // a starting sandbox only looks at it for an instant
			err := flock(l.masks, unix.LOCK_EX)
			if err == nil || i == 200 {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
	case !l.shared:
		if flock(l.live, unix.LOCK_SH) == nil { // converting is not atomic: another may slip in
			l.shared = true
			return nil
		}
		return l.share()
	}
	return nil
}

func (l *liveLock) unlock() {
	if l == nil {
		return
	}
	for _, f := range []*os.File{l.masks, l.live} {
		if f != nil {
			flock(f, unix.LOCK_UN)
			f.Close()
		}
	}
	l.live, l.masks = nil, nil
}

// flock applies how to f without waiting, retrying on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
