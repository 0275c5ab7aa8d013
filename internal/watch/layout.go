package watch

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aboxhq/abox/internal/wsfile"
)

// A repository is a layout, not a name. git takes a directory for a git directory when it
// holds the files a git directory holds, whatever the directory is called: `cd
// tests/fixtures/sample.git && git status` uses sample.git as the repository, reads its config
// (core.fsmonitor, core.worktree, hooks) and runs what it says, and so does a git-aware shell
// prompt on entering it; `git push` to a local path runs that repository's pre-receive hook.
// isGitDirLayout recognises such a directory as git's is_git_directory() (setup.c) does.

// maxHeadRead is how much of HEAD git's validate_headref() reads.
const maxHeadRead = 255

// isGitDirLayout reports whether dir, whose entries are names, is a git directory to git: its
// HEAD is valid ([validHead]) and it has objects and refs — or a commondir file, which moves
// objects and refs to the directory it names (git then checks them there; abox recognises the
// layout from the file alone, so that one naming a repository elsewhere on the host, or one
// made later, is not missed). objects and refs count whatever their type: git only asks
// access(X_OK) of them, which a symlink or an executable file passes too.
func isGitDirLayout(dir string, names map[string]bool) bool {
	if !names["HEAD"] || !validHead(filepath.Join(dir, "HEAD")) {
		return false
	}
	return names["commondir"] || (names["objects"] && names["refs"])
}

// validHead reports whether path is a HEAD git accepts, as validate_headref() decides: a
// symlink whose target starts with refs/, or a regular file whose first 255 bytes are "ref:",
// blanks and "refs/…", or start with an object name in hex (a detached HEAD). Anything else is
// not opened: git would block on a FIFO and read nothing it accepts from a device.
func validHead(path string) bool {
	st, err := os.Lstat(path)
	switch {
	case err != nil:
		return false
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		return err == nil && strings.HasPrefix(target, "refs/")
	case !st.Mode().IsRegular():
		return false
	}
	f, err := wsfile.Open(path, false)
	if err != nil {
		return false
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxHeadRead))
	if err != nil {
		return false
	}
	return validHeadFile(string(buf))
}

// ValidHeadContent reports whether the first bytes of a HEAD file, head, are what git's
// validate_headref() accepts from a regular file: "ref:", blanks, then "refs/"; or an object
// name of at least 40 hex digits. A HEAD committed as a symlink reads as its target, which
// starts with "refs/": that is accepted too, as git accepts such a link.
func ValidHeadContent(head string) bool {
	return validHeadFile(head) || strings.HasPrefix(head, "refs/")
}

// validHeadFile reports whether head, the first bytes of a regular file, is a HEAD git accepts.
func validHeadFile(head string) bool {
	if rest, ok := strings.CutPrefix(head, "ref:"); ok {
		return strings.HasPrefix(strings.TrimLeft(rest, " \t\n\v\f\r"), "refs/")
	}
	if len(head) < 40 {
		return false
	}
	for _, c := range head[:40] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// addGitDir adds the git state of the git directory dir, found by its layout, with its keys
// qualified with where (the directory's path in the workspace and ":"). Without core.worktree,
// git runs a bare repository's hooks in the git directory itself, so a relative
// core.hooksPath is taken from there.
func addGitDir(fp *fingerprinter, st map[string]string, home, dir, where string) {
	inner := map[string]string{}
	common := commonDir(fp, inner, dir)
	if common != dir {
		inner["commondir"] = common
	}
	readGitDir(fp, inner, home, dir, common, dir)
	mergeQualified(st, inner, where)
}
