package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/telemetry"
)

// Bounds of a quarantine copy, made only when the run directory is on another filesystem than
// the workspace. What is beyond them is removed from the workspace without a copy.
const (
	maxQuarantineEntries = 10000
	maxQuarantineBytes   = 64 << 20
)

// QuarantineIndexName is the file in a run's quarantine directory that says what is in it.
const QuarantineIndexName = "index.json"

// QuarantineIndex is a quarantine's index.json.
type QuarantineIndex struct {
	Run    string                `json:"run"`
	Events []telemetry.MaskEvent `json:"events"`
}

// quarantine is one run's quarantine directory, made when something is moved into it.
type quarantine struct {
	dir  string
	used bool
	n    int
	done map[string]string // workspace path → where it went
}

// take moves the entry f.plant out of the workspace into the quarantine and sets f's
// Quarantine, or its Problem. The entry is found again component by component without
// following links, and must be the one teardown looked at. Nothing in it is opened for
// execution: it is renamed, or, across filesystems, copied as data (modes 0600 and 0700)
// and removed.
func (q *quarantine) take(root *os.File, f *finding) {
	if dest, ok := q.done[f.plant]; ok {
		f.Quarantine = dest
		return
	}
	dest, err := q.move(root, f.plant, f.id)
	if err != nil {
		f.Problem = join(f.Problem, fmt.Sprintf("abox could not move it out of the workspace: %v; remove it yourself, without running anything in it", err))
		return
	}
	if q.done == nil {
		q.done = map[string]string{}
	}
	q.done[f.plant] = dest
	f.Quarantine = dest
}

func (q *quarantine) move(root *os.File, rel string, want FileID) (string, error) {
	parent, name, err := openParent(root, rel)
	if err != nil {
		return "", err
	}
	defer closeUnless(parent, root)
	var st unix.Stat_t
	if err := unix.Fstatat(int(parent.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	if uint64(st.Dev) != want.Dev || uint64(st.Ino) != want.Ino {
		return "", errors.New("it changed since abox looked at it")
	}
	if err := statefs.MkdirAll(q.dir); err != nil {
		return "", err
	}
	qd, err := os.Open(q.dir)
	if err != nil {
		return "", err
	}
	defer qd.Close()
	q.used = true
	q.n++
	destName := fmt.Sprintf("%d-%s", q.n, safeName(name))
	dest := filepath.Join(q.dir, destName)
	err = unix.Renameat(int(parent.Fd()), name, int(qd.Fd()), destName)
	if errors.Is(err, unix.EXDEV) {
		c := &copier{}
		if err := c.copyAt(parent, name, qd, destName, 0); err != nil {
			return "", fmt.Errorf("copying it into %s: %w", dest, err)
		}
		if err := removeAt(parent, name, 0); err != nil {
			return dest, fmt.Errorf("removing it after copying it to %s: %w", dest, err)
		}
		return dest, nil
	}
	if err != nil {
		return "", err
	}
	defang(qd, destName, 0, new(int))
	return dest, nil
}

// openParent opens the directory holding rel, through real directories only.
func openParent(root *os.File, rel string) (*os.File, string, error) {
	dir, name := path2(rel)
	if dir == "" {
		return root, name, nil
	}
	parent := root
	for _, part := range strings.Split(dir, "/") {
		var st unix.Stat_t
		if err := unix.Fstatat(int(parent.Fd()), part, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			closeUnless(parent, root)
			return nil, "", err
		}
		next, err := openDirAt(parent, part, FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)})
		closeUnless(parent, root)
		if err != nil {
			return nil, "", err
		}
		parent = next
	}
	return parent, name, nil
}

// path2 splits a slash-separated path into its directory ("" at the top) and its last element.
func path2(rel string) (string, string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// safeName is name reduced to characters that need no escaping anywhere.
func safeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "entry"
	}
	return b.String()
}

// defang removes the execute bits of the regular files under name in dir, the quarantine.
func defang(dir *os.File, name string, depth int, seen *int) {
	var st unix.Stat_t
	if *seen++; *seen > maxQuarantineEntries || depth > MaxMaskDepth ||
		unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
		unix.Fchmodat(int(dir.Fd()), name, uint32(st.Mode)&0o666, 0)
	case unix.S_IFDIR:
		sub, err := openDirAt(dir, name, FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)})
		if err != nil {
			return
		}
		defer sub.Close()
		names, _ := sub.Readdirnames(-1)
		for _, n := range names {
			defang(sub, n, depth+1, seen)
		}
	}
}

// copier copies a tree as data, bounded, following no link and opening no special file.
type copier struct {
	entries int
	bytes   int64
}

func (c *copier) copyAt(src *os.File, name string, dst *os.File, destName string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(int(src.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if c.entries++; c.entries > maxQuarantineEntries || depth > MaxMaskDepth {
		return nil // beyond the bounds: removed without a copy
	}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		return c.copyDir(src, name, dst, destName, st, depth)
	case unix.S_IFREG:
		return c.copyFile(src, name, dst, destName, st)
	case unix.S_IFLNK:
		target := make([]byte, 4096)
		n, err := unix.Readlinkat(int(src.Fd()), name, target)
		if err != nil {
			return err
		}
		return unix.Symlinkat(string(target[:n]), int(dst.Fd()), destName)
	}
	return nil // fifos, sockets, devices: never opened; removed
}

func (c *copier) copyDir(src *os.File, name string, dst *os.File, destName string, st unix.Stat_t, depth int) error {
	from, err := openDirAt(src, name, FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)})
	if err != nil {
		return err
	}
	defer from.Close()
	if err := unix.Mkdirat(int(dst.Fd()), destName, 0o700); err != nil {
		return err
	}
	fd, err := unix.Openat(int(dst.Fd()), destName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	to := os.NewFile(uintptr(fd), destName)
	defer to.Close()
	for c.entries <= maxQuarantineEntries {
		names, err := from.Readdirnames(1024)
		for _, n := range names {
			if err := c.copyAt(from, n, to, n, depth+1); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) copyFile(src *os.File, name string, dst *os.File, destName string, st unix.Stat_t) error {
	fd, err := unix.Openat(int(src.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	in := os.NewFile(uintptr(fd), name)
	defer in.Close()
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil || got.Ino != st.Ino || uint32(got.Mode)&unix.S_IFMT != unix.S_IFREG {
		return errors.New("it changed while abox copied it")
	}
	ofd, err := unix.Openat(int(dst.Fd()), destName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(ofd), destName)
	left := maxQuarantineBytes - c.bytes
	n, err := io.Copy(out, io.LimitReader(in, max(left, 0)))
	c.bytes += n
	return errors.Join(err, out.Close())
}

// removeAt removes name in dir and everything under it, following no link.
func removeAt(dir *os.File, name string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(int(dir.Fd()), name, 0)
	}
	if depth > MaxMaskDepth {
		return fmt.Errorf("nested deeper than %d directories", MaxMaskDepth)
	}
	sub, err := openDirAt(dir, name, FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)})
	if err != nil {
		return err
	}
	names, err := sub.Readdirnames(-1)
	for _, n := range names {
		if err == nil {
			err = removeAt(sub, n, depth+1)
		}
	}
	sub.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR)
}

// writeIndex writes the quarantine's index.json, creating the directory if nothing was moved
// into it: a failure abox could not neutralise must keep doctor failing too.
func (q *quarantine) writeIndex(run string, events []telemetry.MaskEvent) error {
	data, err := json.MarshalIndent(QuarantineIndex{Run: run, Events: events}, "", "  ")
	if err != nil {
		return err
	}
	return statefs.WriteFile(filepath.Join(q.dir, QuarantineIndexName), append(data, '\n'), statefs.PrivateMode)
}

// Quarantine is one run's quarantine directory that still holds something.
type Quarantine struct {
	Dir     string
	Index   QuarantineIndex // empty when index.json is missing or does not decode
	Entries []string        // the names in it, index.json aside
}

// Quarantines returns every run's quarantine under runsDir that is not empty, oldest first.
func Quarantines(runsDir string) ([]Quarantine, error) {
	dirs, err := filepath.Glob(filepath.Join(runsDir, "*", "quarantine"))
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	var out []Quarantine
	for _, d := range dirs {
		names, err := readNames(d)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			continue
		}
		q := Quarantine{Dir: d}
		for _, n := range names {
			if n != QuarantineIndexName {
				q.Entries = append(q.Entries, n)
			}
		}
		if data, err := os.ReadFile(filepath.Join(d, QuarantineIndexName)); err == nil {
			json.Unmarshal(data, &q.Index)
		}
		out = append(out, q)
	}
	return out, nil
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}
