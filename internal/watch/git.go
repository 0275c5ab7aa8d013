package watch

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Limits on what git-tamper reads.
const (
	MaxConfigSize = 4 << 20 // bytes of one config file
	MaxIncludes   = 10      // include depth, as git's own limit
	MaxHooks      = 200     // files in the hooks directory
)

// Fingerprint prefixes of [GitState] keys.
const (
	gitKeyPrefix     = "key:"     // key:core.hookspath → its values
	gitHookPrefix    = "hook:"    // hook:pre-commit → the file's fingerprint
	gitIncludePrefix = "include:" // include:/abs/path → the included file's fingerprint
	gitErrorPrefix   = "error:"   // error:<file> → why it could not be read or parsed
	gitLinkPrefix    = "link:"    // link:<config file> → the symlink's target
)

// ErrNotRepo is returned by [GitState] for a workspace without .git.
var ErrNotRepo = errors.New("not a git repository")

// GitState fingerprints what in a repository's git directory makes git run code or redirect
// credentials: the dangerous keys ([Dangerous]) of .git/config, of config.worktree and of every
// file they include (followed without evaluating includeIf conditions, as if all held), and
// every hook file that is not a .sample, by content. home expands ~/ in include paths.
//
// A .git file ("gitdir: …", a worktree or submodule) is followed, and its commondir too; the
// pointer itself is part of the fingerprint. Git is never run: it would execute the very hooks
// and helpers being checked.
func GitState(ws, home string) (map[string]string, error) {
	gitDir, common, pointer, err := findGitDir(ws)
	if err != nil {
		return nil, err
	}
	st := map[string]string{}
	if pointer != "" {
		st["gitdir"] = pointer
	}
	r := &configReader{st: st, home: home, seen: map[string]bool{}}
	r.read(filepath.Join(common, "config"), 0, false)
	if gitDir != common {
		r.read(filepath.Join(gitDir, "config.worktree"), 0, true)
	} else {
		r.read(filepath.Join(common, "config.worktree"), 0, true)
	}
	hooks(st, filepath.Join(common, "hooks"))
	return st, nil
}

// findGitDir returns the git directory of ws, its common directory (equal unless a worktree),
// and the "gitdir:" pointer when .git is a file.
func findGitDir(ws string) (gitDir, common, pointer string, err error) {
	dotgit := filepath.Join(ws, ".git")
	st, err := os.Lstat(dotgit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", "", ErrNotRepo
	case err != nil:
		return "", "", "", err
	case st.IsDir():
		return dotgit, dotgit, "", nil
	case !st.Mode().IsRegular():
		return "", "", "", fmt.Errorf("%s is neither a directory nor a gitdir file", dotgit)
	}
	data, err := readRegular(dotgit, 4096, false)
	if err != nil {
		return "", "", "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", "", "", fmt.Errorf("%s does not start with %q", dotgit, "gitdir:")
	}
	pointer = strings.TrimSpace(target)
	gitDir = pointer
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(ws, gitDir)
	}
	common = gitDir
	if c, err := readRegular(filepath.Join(gitDir, "commondir"), 4096, true); err == nil {
		if c := strings.TrimSpace(string(c)); filepath.IsAbs(c) {
			common = c
		} else if c != "" {
			common = filepath.Join(gitDir, c)
		}
	}
	return filepath.Clean(gitDir), filepath.Clean(common), pointer, nil
}

// configReader reads config files into a fingerprint, following includes.
type configReader struct {
	st   map[string]string
	home string
	seen map[string]bool
}

// read adds the dangerous keys of the config file at path. optional files may be missing.
func (r *configReader) read(path string, depth int, optional bool) {
	if r.seen[path] {
		return
	}
	r.seen[path] = true
	if target, err := os.Readlink(path); err == nil {
		r.st[gitLinkPrefix+path] = target // git follows it; so does abox, and records where
	}
	data, err := readRegular(path, MaxConfigSize, true)
	if errors.Is(err, fs.ErrNotExist) && optional {
		return
	}
	if depth > 0 {
		r.st[gitIncludePrefix+path] = fingerprintData(data, err)
	}
	if err != nil {
		if depth == 0 {
			r.st[gitErrorPrefix+path] = errText(err)
		}
		return
	}
	entries, perr := ParseConfig(data)
	if perr != nil {
		r.st[gitErrorPrefix+path] = "unparseable: " + perr.Error()
	}
	for _, e := range entries {
		if Dangerous(e) {
			k := gitKeyPrefix + e.Key
			if old, ok := r.st[k]; ok {
				r.st[k] = old + "\n" + shownValue(e)
			} else {
				r.st[k] = shownValue(e)
			}
		}
		if isInclude(e) && depth < MaxIncludes {
			r.read(r.includePath(path, e.Value), depth+1, false)
		}
	}
}

// includePath resolves an include.path value as git does: ~/ is the home directory, a relative
// path is relative to the including file's directory.
func (r *configReader) includePath(from, p string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = filepath.Join(r.home, strings.TrimPrefix(p, "~"))
	case !filepath.IsAbs(p):
		p = filepath.Join(filepath.Dir(from), p)
	}
	return filepath.Clean(p)
}

func shownValue(e Entry) string {
	if e.NoValue {
		return "(true)"
	}
	return e.Value
}

// hooks adds the fingerprint of every hook in dir that is not a .sample.
func hooks(st map[string]string, dir string) {
	f, err := os.Open(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			st[gitErrorPrefix+dir] = errText(err)
		}
		return
	}
	defer f.Close()
	entries, err := f.ReadDir(MaxHooks + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		st[gitErrorPrefix+dir] = errText(err)
	}
	if len(entries) > MaxHooks {
		st[gitErrorPrefix+dir] = fmt.Sprintf("more than %d entries; only the first were read", MaxHooks)
		entries = entries[:MaxHooks]
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, d := range entries {
		if strings.HasSuffix(d.Name(), ".sample") {
			continue
		}
		st[gitHookPrefix+d.Name()] = hookFingerprint(filepath.Join(dir, d.Name()))
	}
}

// hookFingerprint is [Fingerprint], plus the content of a symlink's target: git runs a hook
// through its link, so a change behind the link matters as much as a retargeted link.
func hookFingerprint(path string) string {
	fp := Fingerprint(path)
	if strings.HasPrefix(fp, "symlink:") {
		if sum, err := hashRegular(path, true); err == nil {
			fp += " sha256:" + sum
		}
	}
	return fp
}

// Fingerprint describes the file at path without following a symlink: "sha256:<hex>" for a
// regular file, "symlink:<target>", "dir", "special:<mode>" for anything else, or
// "unreadable: <reason>". A regular file is opened without blocking, so a FIFO swapped in
// after the check cannot stall the caller.
func Fingerprint(path string) string {
	st, err := os.Lstat(path)
	switch {
	case err != nil:
		return "unreadable: " + errText(err)
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return "unreadable: " + errText(err)
		}
		return "symlink:" + target
	case st.IsDir():
		return "dir"
	case !st.Mode().IsRegular():
		return "special:" + st.Mode().Type().String()
	}
	sum, err := hashRegular(path, false)
	if err != nil {
		return "unreadable: " + errText(err)
	}
	return "sha256:" + sum
}

// hashRegular hashes a regular file, refusing anything else even if it was swapped in. A
// symlink is followed only when follow is set.
func hashRegular(path string, follow bool) (string, error) {
	f, err := openRegular(path, follow)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReader(f)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readRegular reads at most max bytes of a regular file.
func readRegular(path string, max int64, follow bool) ([]byte, error) {
	f, err := openRegular(path, follow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return data, nil
}

// openRegular opens a regular file for reading without blocking on a FIFO or device.
func openRegular(path string, follow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("not a regular file")
	}
	return f, nil
}

func fingerprintData(data []byte, err error) string {
	if err != nil {
		return "unreadable: " + errText(err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// errText is err without the path, which the key already names.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// DescribeGitKey turns a GitState key into words for a report: "core.fsmonitor", "hook
// pre-commit", "included file /x".
func DescribeGitKey(k string) string {
	switch {
	case strings.HasPrefix(k, gitKeyPrefix):
		return strings.TrimPrefix(k, gitKeyPrefix)
	case strings.HasPrefix(k, gitHookPrefix):
		return "hook " + strings.TrimPrefix(k, gitHookPrefix)
	case strings.HasPrefix(k, gitIncludePrefix):
		return "included file " + strings.TrimPrefix(k, gitIncludePrefix)
	case strings.HasPrefix(k, gitErrorPrefix):
		return "unreadable " + strings.TrimPrefix(k, gitErrorPrefix)
	case strings.HasPrefix(k, gitLinkPrefix):
		return "symlinked config " + strings.TrimPrefix(k, gitLinkPrefix)
	}
	return k
}

// CountGit counts the dangerous keys and the hooks in a [GitState] fingerprint.
func CountGit(st map[string]string) (keys, hooks int) {
	for k := range st {
		switch {
		case strings.HasPrefix(k, gitKeyPrefix):
			keys++
		case strings.HasPrefix(k, gitHookPrefix):
			hooks++
		}
	}
	return keys, hooks
}
