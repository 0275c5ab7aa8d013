// Package wsfile reads files of the workspace, which the agent writes, without letting it steer
// the reader.
//
// abox reads workspace files on the host, as the user: the manifest, the watched files it
// fingerprints, .git's config and hooks, the review copy. The agent chose what lies at each of
// those paths. A FIFO blocks the first open for reading until someone writes to it, which after
// the run nobody will; a symlink to /dev/zero never ends; a symlink to a large host file makes
// every read as slow as the file is long, and one to /etc/shadow reads a file that is none of the
// workspace's business. So the functions here:
//
//   - open only regular files: the path is stat'ed first, and a FIFO, socket, device or
//     directory is refused with a [NotRegularError] that names what it is, without being opened;
//   - open with O_NONBLOCK, so that something swapped in between the stat and the open cannot
//     block either, and check that what was opened is what was stat'ed;
//   - follow a final symlink only when asked, and [OpenIn] follows links only as long as they
//     stay inside a root directory (the workspace), never out of it;
//   - read at most a bound, and say so when a file is larger.
//
// Nothing here stops a reader racing a process that is still writing the workspace; abox reads
// after the agent's container is gone, and the checks above keep a racing writer from blocking
// it or making it follow a link out.
package wsfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is returned for a path that is not a regular file.
type NotRegularError struct {
	Mode fs.FileMode // the type bits of what was found
}

func (e *NotRegularError) Error() string { return "not a regular file: " + Kind(e.Mode) }

// ErrTooLarge is returned by [Read] for a file larger than its bound.
var ErrTooLarge = errors.New("larger than the bound")

// Kind names a file type for a person: "regular file", "symlink", "FIFO", "socket", "character
// device", "block device", "directory".
func Kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t&fs.ModeNamedPipe != 0:
		return "FIFO"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "block device"
	case t&fs.ModeDir != 0:
		return "directory"
	default:
		return "special file (" + t.String() + ")"
	}
}

// Open opens the regular file at path for reading. A final symlink is followed only when
// follow is set, and then only to a regular file; parent directories are resolved as the
// system resolves them.
func Open(path string, follow bool) (*os.File, error) {
	stat, flags := os.Lstat, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW
	if follow {
		stat, flags = os.Stat, os.O_RDONLY|syscall.O_NONBLOCK
	}
	st, err := stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Mode: st.Mode()}}
	}
	f, err := os.OpenFile(path, flags, 0)
	return verify(f, err, st)
}

// OpenIn opens the regular file rel under root for reading. Symlinks, the final one included,
// are followed only while they stay inside root: one that leads out is an error, and the file
// it names is never opened.
func OpenIn(root *os.Root, rel string) (*os.File, error) {
	st, err := root.Stat(rel)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: &NotRegularError{Mode: st.Mode()}}
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	return verify(f, err, st)
}

// verify returns the file an open returned (f, err) if it is the regular file st describes, and
// closes it otherwise: something swapped in between the stat and the open is refused.
func verify(f *os.File, err error, st fs.FileInfo) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	got, err := f.Stat()
	if err != nil || !got.Mode().IsRegular() || !os.SameFile(st, got) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: f.Name(), Err: errors.New("replaced while being opened")}
	}
	return f, nil
}

// Read reads the regular file at path ([Open]); a file larger than max bytes is an error
// wrapping [ErrTooLarge], and no more than max+1 bytes are read.
func Read(path string, max int64, follow bool) ([]byte, error) {
	f, err := Open(path, follow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, max)
}

// ReadIn is [Read] for [OpenIn].
func ReadIn(root *os.Root, rel string, max int64) ([]byte, error) {
	f, err := OpenIn(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, max)
}

func readAtMost(f *os.File, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w of %d bytes", f.Name(), ErrTooLarge, max)
	}
	return data, nil
}
