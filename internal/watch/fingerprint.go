package watch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aboxhq/abox/internal/linkwalk"
	"github.com/aboxhq/abox/internal/wsfile"
)

// Bounds on what fingerprinting reads.
const (
	// MaxHashBytes is the largest file hashed by content. A larger one is fingerprinted by its
	// size, inode and change time instead, without being read: the agent can neither keep a
	// file's ctime when it writes it nor set it back, so every change still shows.
	MaxHashBytes = 1 << 20
	// MaxHashTotal bounds the bytes one snapshot hashes; the files beyond it are fingerprinted
	// like large ones. A file's fingerprint may then change kind between two snapshots, which
	// shows as a change: a cap reports too much, never too little.
	MaxHashTotal = 64 << 20
)

// Fingerprint kinds: the prefix of a fingerprint string.
const (
	fpFile    = "sha256:"      // sha256:<hex>, a regular file read whole
	fpLarge   = "large:"       // large:size=<n> ino=<n> ctime=<ns>, a regular file not read
	fpLink    = "symlink:"     // symlink:<target>, then "\x00" and the target's fingerprint if inside the workspace
	fpFIFO    = "fifo"         // a named pipe
	fpSocket  = "socket"       // a unix socket
	fpDevice  = "device:"      // device:char or device:block
	fpDir     = "dir"          // a directory (hooks only; watched directories are walked)
	fpSpecial = "special:"     // any other type
	fpUnread  = "unreadable: " // unreadable: <reason>
	// fpMasked is a path the sandbox masks, recorded as there and never read: its content is
	// the user's secret, and the agent cannot write it while it is masked.
	fpMasked = "masked"
)

// linkSep separates a symlink's target from its target's fingerprint. A target cannot hold NUL.
const linkSep = "\x00"

// fingerprinter fingerprints files without following links out of the workspace, opening
// anything but a regular file, or reading more than its budget.
type fingerprinter struct {
	ws       string
	realWS   string           // ws with its symlinks resolved, to tell what a git path's walk reaches ([gitPath])
	root     *os.Root         // ws, to follow a symlink in it; nil follows none
	links    *linkwalk.Walker // where the workspace's symlinks lead, through root
	hashLeft int64            // bytes that may still be hashed
	// gitWalkLeft is how many names the walks of git's paths may still look at ([MaxGitWalk]).
	gitWalkLeft int
	// gitCapped are the bounds the reading of git hit ([Snapshot.GitCapped]).
	gitCapped []Capped
}

// gitBound records in st, under the error key of what, that the reading of git stopped at a
// bound there, and notes it for [Snapshot.GitCapped]: a bound of the reading of git is said
// every time it is hit, not only when it is new.
func (f *fingerprinter) gitBound(st map[string]string, what, why string) {
	st[gitErrorPrefix+what] = why
	for _, c := range f.gitCapped {
		if c.Pattern == what {
			return
		}
	}
	f.gitCapped = append(f.gitCapped, Capped{Pattern: what, Reason: why})
}

func newFingerprinter(ws string) *fingerprinter {
	fp := &fingerprinter{ws: ws, realWS: ws, hashLeft: MaxHashTotal, gitWalkLeft: MaxGitWalk}
	if abs, err := filepath.Abs(ws); err == nil {
		fp.realWS = abs
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			fp.realWS = real
		}
	}
	if r, err := os.OpenRoot(ws); err == nil {
		fp.root = r
		fp.links = linkwalk.New(linkwalk.Options{Lookup: fp.lookup, Top: ws})
	}
	return fp
}

// lookup says what the workspace holds at rel, without following it, for [linkwalk].
func (f *fingerprinter) lookup(rel string) linkwalk.Node {
	st, err := f.root.Lstat(rel)
	switch {
	case err != nil:
		return linkwalk.Node{}
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := f.root.Readlink(rel)
		return linkwalk.Node{Kind: linkwalk.Link, Target: target, Read: err == nil}
	case st.IsDir():
		return linkwalk.Node{Kind: linkwalk.Dir}
	}
	return linkwalk.Node{Kind: linkwalk.File}
}

func (f *fingerprinter) close() {
	if f.root != nil {
		f.root.Close()
	}
}

// of describes the file at path without following it: a regular file by content (or by size,
// inode and ctime beyond the bounds), a symlink by its target — and, when the link resolves
// inside the workspace, by what it leads to as well, since whatever runs the file runs that —,
// anything else by its type. Only a regular file is ever opened.
func (f *fingerprinter) of(path string) string {
	st, err := os.Lstat(path)
	if err != nil {
		return fpUnread + errText(err)
	}
	if st.Mode()&fs.ModeSymlink == 0 {
		return f.ofInfo(path, st, func() (*os.File, error) { return wsfile.Open(path, false) })
	}
	target, err := os.Readlink(path)
	if err != nil {
		return fpUnread + errText(err)
	}
	fp := fpLink + target
	if behind := f.behindLink(path); behind != "" {
		fp += linkSep + behind
	}
	return fp
}

// behindLink fingerprints what the symlink at path leads to, if it stays in the workspace. Where
// it leads is walked as the kernel walks it, link by link up to Linux's 40 ([linkwalk]), so
// that what a Makefile's chain of links leads to is what make reads; the file is then opened
// through the workspace root, which no link can leave.
func (f *fingerprinter) behindLink(path string) string {
	rel, err := filepath.Rel(f.ws, path)
	if f.root == nil || err != nil || !filepath.IsLocal(rel) {
		return ""
	}
	rel = filepath.ToSlash(rel)
	d := f.links.Link(rel, f.lookup(rel))
	if d.Kind != linkwalk.Inside {
		return "" // out of the workspace, or unresolvable: the target alone is recorded
	}
	st, err := f.root.Stat(d.Path)
	if err != nil {
		return "" // dangling
	}
	return f.ofInfo(path, st, func() (*os.File, error) { return wsfile.OpenIn(f.root, d.Path) })
}

// ofInfo fingerprints a file that is not a symlink, described by st; open opens it.
func (f *fingerprinter) ofInfo(path string, st fs.FileInfo, open func() (*os.File, error)) string {
	m := st.Mode()
	switch {
	case m.IsRegular():
		return f.regular(st, open)
	case m.IsDir():
		return fpDir
	case m&fs.ModeNamedPipe != 0:
		return fpFIFO
	case m&fs.ModeSocket != 0:
		return fpSocket
	case m&fs.ModeCharDevice != 0:
		return fpDevice + "char"
	case m&fs.ModeDevice != 0:
		return fpDevice + "block"
	}
	return fpSpecial + m.Type().String()
}

// regular hashes a regular file within the budget, or fingerprints it by its metadata.
func (f *fingerprinter) regular(st fs.FileInfo, open func() (*os.File, error)) string {
	size := st.Size()
	if size > MaxHashBytes || size > f.hashLeft {
		return large(st)
	}
	file, err := open()
	if err != nil {
		return fpUnread + errText(err)
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(file, MaxHashBytes+1))
	f.hashLeft -= n
	switch {
	case err != nil:
		return fpUnread + errText(err)
	case n > MaxHashBytes: // it grew since the stat
		return large(st)
	}
	return fpFile + hex.EncodeToString(h.Sum(nil))
}

// large fingerprints a regular file by what the kernel keeps for it, without reading it.
func large(st fs.FileInfo) string {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Sprintf("%ssize=%d mtime=%d", fpLarge, st.Size(), st.ModTime().UnixNano())
	}
	return fmt.Sprintf("%ssize=%d ino=%d ctime=%d", fpLarge, st.Size(), s.Ino, s.Ctim.Nano())
}

// Fingerprint describes the file at path as a snapshot does, following a symlink only while it
// stays in the directory that holds path.
func Fingerprint(path string) string {
	f := newFingerprinter(filepath.Dir(path))
	defer f.close()
	return f.of(path)
}

// Describe names what a fingerprint stands for, for a person: "" for a regular file (the
// common case, which needs no words), "a symlink → <target>", "a FIFO", "a socket", "a
// character device", "a block device", "a directory", "a file over 1 MiB", "unreadable:
// <reason>". The target is the agent's text: print it escaped.
func Describe(fp string) string {
	switch {
	case fp == "" || strings.HasPrefix(fp, fpFile):
		return ""
	case strings.HasPrefix(fp, fpLink):
		target, _, _ := strings.Cut(strings.TrimPrefix(fp, fpLink), linkSep)
		return "a symlink → " + target
	case strings.HasPrefix(fp, fpLarge):
		return fmt.Sprintf("a file over %d MiB", MaxHashBytes>>20)
	case fp == fpFIFO:
		return "a FIFO"
	case fp == fpSocket:
		return "a socket"
	case fp == fpDevice+"char":
		return "a character device"
	case fp == fpDevice+"block":
		return "a block device"
	case fp == fpDir:
		return "a directory"
	case fp == fpMasked:
		return "masked, not read"
	}
	return fp
}

// errText is err without the path, which the key already names.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
