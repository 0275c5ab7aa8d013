package watch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/aboxhq/abox/internal/wsfile"
)

// What git reads of a repository's history that the work tree does not show. A replace ref
// (refs/replace/<object>) makes every git command read another object wherever that one is
// asked for: `git show HEAD:Makefile` and the checkout a user makes to undo a change (`git
// checkout -- Makefile`, `git reset --hard`) write the agent's Makefile, while `git status`
// and `git diff` stay clean. info/grafts rewrites history the same way, and
// objects/info/alternates adds object stores git reads. So the loose replace refs and those of
// packed-refs are kept in the git state, and the two files by their fingerprints. The tips of
// the workspace's branches are recorded beside it ([Snapshot.Tips]): a commit on the user's
// branch is what their next push sends, whatever the work tree shows.

// MaxPackedRefs bounds the bytes of packed-refs read; a larger file is named, not read.
const MaxPackedRefs = 16 << 20

// MaxTips bounds the branches whose tips a snapshot records.
const MaxTips = 1000

// Prefixes of the git state's keys for history.
const (
	gitRefPrefix  = "ref:"  // ref:refs/replace/<object> → the loose ref's fingerprint, or "packed <object>"
	gitFilePrefix = "file:" // file:info/grafts → the file's fingerprint
)

// historyState adds to st the replace refs of the common directory common, loose and packed,
// and the fingerprints of its info/grafts and objects/info/alternates.
func historyState(fp *fingerprinter, st map[string]string, common string) {
	listFiles(fp, st, filepath.Join(common, "refs", "replace"), gitRefPrefix+"refs/replace/", "replace refs")
	for ref, obj := range packedRefs(fp, st, common, "refs/replace/") {
		if _, loose := st[gitRefPrefix+ref]; !loose {
			st[gitRefPrefix+ref] = "packed " + obj
		}
	}
	for _, f := range []string{"info/grafts", "objects/info/alternates"} {
		g := fp.gitPath(common + "/" + f)
		recordLinks(st, g)
		data, err := fp.readGit(g, MaxHashBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		st[gitFilePrefix+f] = fingerprintData(data, err)
	}
}

// packedRefs returns the refs of common's packed-refs whose names start with prefix, with the
// objects they name. A file over [MaxPackedRefs] is a bound of the reading of git.
func packedRefs(fp *fingerprinter, st map[string]string, common, prefix string) map[string]string {
	g := fp.gitPath(common + "/packed-refs")
	recordLinks(st, g)
	data, err := fp.readGit(g, MaxPackedRefs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, wsfile.ErrTooLarge):
		fp.gitBound(st, g.key, fmt.Sprintf("packed-refs is larger than %d MiB: its replace refs and branches were not read", MaxPackedRefs>>20))
		return nil
	case err != nil:
		st[gitErrorPrefix+g.key] = errText(err)
		return nil
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), MaxPackedRefs)
	for sc.Scan() {
		obj, ref, ok := strings.Cut(sc.Text(), " ")
		if ok && !strings.HasPrefix(obj, "#") && !strings.HasPrefix(obj, "^") && strings.HasPrefix(ref, prefix) {
			out[ref] = obj
		}
	}
	return out
}

// tips records HEAD of the git directory gitDir and the tip of every branch of its common
// directory common, loose or packed, up to [MaxTips]: HEAD → its content, refs/heads/<name> →
// the object it names.
func tips(fp *fingerprinter, gitDir, common string) map[string]string {
	scratch := map[string]string{}
	out := map[string]string{}
	if data, err := fp.readGit(fp.gitPath(gitDir+"/HEAD"), maxHeadRead); err == nil {
		out["HEAD"] = strings.TrimSpace(string(data))
	}
	for ref, obj := range packedRefs(fp, scratch, common, "refs/heads/") {
		out[ref] = obj
	}
	looseRefs(fp, out, filepath.Join(common, "refs", "heads"), "refs/heads/", 0)
	if len(out) > MaxTips+1 {
		names := make([]string, 0, len(out))
		for n := range out {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names[MaxTips+1:] {
			delete(out, n)
		}
	}
	return out
}

// looseRefs adds the loose refs under dir, named from prefix, following no link, at most
// [MaxTips] of them and [MaxIncludes] levels deep.
func looseRefs(fp *fingerprinter, out map[string]string, dir, prefix string, depth int) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(MaxTips + 1)
	f.Close()
	sort.Strings(names)
	for _, n := range names {
		if len(out) > MaxTips {
			return
		}
		p := filepath.Join(dir, n)
		st, err := os.Lstat(p)
		switch {
		case err != nil:
		case st.IsDir() && depth < MaxIncludes:
			looseRefs(fp, out, p, prefix+n+"/", depth+1)
		case st.Mode().IsRegular():
			if data, err := wsfile.Read(p, 4096, false); err == nil {
				out[prefix+n] = strings.TrimSpace(string(data))
			}
		default:
			out[prefix+n] = fp.of(p)
		}
	}
}
