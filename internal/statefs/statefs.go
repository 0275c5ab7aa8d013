// Package statefs writes abox's state so that it is never half-written and never readable by
// other users.
//
// Every file is written to a temporary file in the same directory, synced, and renamed over the
// target, so a crash, a full disk or a Ctrl-C leaves either the old content or the new one.
// Directories are created 0700. A per-project lock serialises commands that mutate one project.
package statefs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Modes for state files.
const (
	DirMode     fs.FileMode = 0o700
	PrivateMode fs.FileMode = 0o600 // anything that may reveal a secret or a token
)

// MkdirAll creates dir and its parents with mode 0700. An existing directory keeps its mode.
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return nil
}

// WriteFile atomically replaces path with data and sets mode. The parent directory is created
// with mode 0700 if missing.
func WriteFile(path string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := MkdirAll(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	ok = true
	syncDir(dir)
	return nil
}

// AppendLine appends one line (a newline is added) to path, creating it with mode 0600. A single
// write of a line under the pipe-buffer size is atomic with respect to other appenders.
func AppendLine(path string, line []byte) error {
	if err := MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, PrivateMode)
	if err != nil {
		return fmt.Errorf("appending to %s: %w", path, err)
	}
	_, werr := f.Write(append(append([]byte{}, line...), '\n'))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("appending to %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Lock takes an exclusive advisory lock on path (created if missing), waiting for other holders.
// The returned func releases it.
func Lock(path string) (unlock func(), err error) {
	if err := MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, PrivateMode)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// LockContext is [Lock] for at most as long as ctx lives: it tries the lock every 50 ms, and
// returns ctx's error once ctx ends without it.
func LockContext(ctx context.Context, path string) (unlock func(), err error) {
	if err := MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, PrivateMode)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EINTR) && !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("locking %s: held by another process: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
