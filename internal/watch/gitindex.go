package watch

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/wsfile"
)

// What the index hides from the work tree. The watch fingerprints the work tree; git reads the
// index. An entry marked skip-worktree or assume-unchanged is one git status no longer compares
// with the work tree: the agent commits a CI workflow, marks it skip-worktree and removes it
// from the work tree, and HEAD carries it while `git status` is clean and no watched file
// changed. So the index of the workspace's repository is read, and each such entry kept in the
// git state (index:<path> → its flags); the gitlinks it names are the repositories `git
// status` looks into ([nestedRepos] reads them wherever they are).

// Bounds of the reading of the index.
const (
	MaxIndexBytes = 32 << 20 // bytes of .git/index read; a larger index is named, not read
	MaxFlagged    = 100      // flagged entries kept one by one; the rest are kept as one count
	MaxGitlinks   = 500      // gitlinks of the index whose repositories are read
)

// gitIndexPrefix keys an index entry the git state keeps: index:<path> → its flags.
const gitIndexPrefix = "index:"

// indexMore is the key of the flagged entries beyond [MaxFlagged].
const indexMore = gitIndexPrefix + "(more)"

// indexEntry is what the watch keeps of one entry of an index.
type indexEntry struct {
	path    string
	flags   string // "skip-worktree", "assume-unchanged", both, or ""
	gitlink bool
}

// readIndex parses an index file, version 2, 3 or 4, as git's read-cache.c lays it out, with
// object names of 20 bytes (SHA-1) or 32 (SHA-256), whichever the file's layout fits. It keeps
// the entries with a flag and the gitlinks.
func readIndex(data []byte) ([]indexEntry, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errors.New("not an index: no DIRC signature")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d, not 2, 3 or 4", version)
	}
	var err error
	for _, hashLen := range []int{20, 32} {
		var out []indexEntry
		if out, err = parseEntries(data, version, hashLen); err == nil {
			return out, nil
		}
	}
	return nil, err
}

// parseEntries reads the entries of an index whose object names are hashLen bytes long, and
// checks that what follows them is extensions ending at the file's trailing hash.
func parseEntries(data []byte, version uint32, hashLen int) ([]indexEntry, error) {
	count := binary.BigEndian.Uint32(data[8:12])
	end := len(data) - hashLen
	if end < 12 {
		return nil, errors.New("truncated")
	}
	var out []indexEntry
	off, prev := 12, ""
	for i := uint32(0); i < count; i++ {
		fixed := 40 + hashLen + 2
		if off+fixed > end {
			return nil, errors.New("truncated entry")
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		flags := binary.BigEndian.Uint16(data[off+40+hashLen : off+fixed])
		var ext uint16
		if flags&0x4000 != 0 {
			if version < 3 || off+fixed+2 > end {
				return nil, errors.New("extended flags in a version 2 index")
			}
			ext = binary.BigEndian.Uint16(data[off+fixed : off+fixed+2])
			fixed += 2
		}
		name, next, err := entryName(data[:end], off, fixed, version, prev)
		if err != nil {
			return nil, err
		}
		prev, off = name, next
		e := indexEntry{path: name, gitlink: mode&0o170000 == 0o160000}
		var fs []string
		if ext&0x4000 != 0 {
			fs = append(fs, "skip-worktree")
		}
		if flags&0x8000 != 0 {
			fs = append(fs, "assume-unchanged")
		}
		e.flags = strings.Join(fs, ", ")
		if e.flags != "" || e.gitlink {
			out = append(out, e)
		}
	}
	for off < end { // extensions: a signature, a size, the data
		if off+8 > end {
			return nil, errors.New("truncated extension")
		}
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		if size < 0 || size > end-off-8 {
			return nil, errors.New("extension past the end")
		}
		off += 8 + size
	}
	return out, nil
}

// entryName reads the name of the entry at off, whose fixed part is fixed bytes long, and
// returns it with the offset of the next entry. Version 4 names are prefix-compressed against
// the previous one (prev) and unpadded; earlier ones end in 1 to 8 NULs that pad the entry to
// a multiple of 8 bytes.
func entryName(data []byte, off, fixed int, version uint32, prev string) (string, int, error) {
	p := off + fixed
	if version == 4 {
		strip, n := gitVarint(data[p:])
		if n == 0 || strip > uint64(len(prev)) {
			return "", 0, errors.New("bad prefix length")
		}
		p += n
		nul := bytes.IndexByte(data[p:], 0)
		if nul < 0 {
			return "", 0, errors.New("unterminated name")
		}
		return prev[:len(prev)-int(strip)] + string(data[p:p+nul]), p + nul + 1, nil
	}
	nul := bytes.IndexByte(data[p:], 0)
	if nul < 0 {
		return "", 0, errors.New("unterminated name")
	}
	next := off + (fixed+nul+8)&^7
	if next > len(data) {
		return "", 0, errors.New("truncated padding")
	}
	for _, b := range data[p+nul : next] {
		if b != 0 {
			return "", 0, errors.New("padding is not NUL")
		}
	}
	return string(data[p : p+nul]), next, nil
}

// gitVarint decodes git's offset varint (varint.c): seven bits a byte, each continuation adding
// one before the shift. It returns the value and the bytes read, 0 when malformed.
func gitVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	val := uint64(b[0] & 127)
	i := 1
	for c := b[0]; c&128 != 0; i++ {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		val = ((val + 1) << 7) | uint64(c&127)
	}
	return val, i
}

// indexState adds to st the flagged entries of the index of the git directory gitDir, at most
// [MaxFlagged] one by one and the rest as one count and hash, and returns its gitlinks, at most
// [MaxGitlinks]. An index it cannot read or parse is named; one over [MaxIndexBytes] is a bound
// of the reading of git ([fingerprinter.gitBound]).
func indexState(fp *fingerprinter, st map[string]string, gitDir string) []string {
	g := fp.gitPath(gitDir + "/index")
	recordLinks(st, g)
	data, err := fp.readGit(g, MaxIndexBytes)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, wsfile.ErrTooLarge):
		fp.gitBound(st, g.key, fmt.Sprintf("the index is larger than %d MiB: its skip-worktree and assume-unchanged entries and its gitlinks were not read", MaxIndexBytes>>20))
		return nil
	default:
		st[gitErrorPrefix+g.key] = errText(err)
		return nil
	}
	entries, err := readIndex(data)
	if err != nil {
		st[gitErrorPrefix+g.key] = "unparseable: " + err.Error()
		return nil
	}
	var flagged []indexEntry
	var links []string
	for _, e := range entries {
		if e.flags != "" {
			flagged = append(flagged, e)
		}
		if e.gitlink && len(links) < MaxGitlinks {
			links = append(links, e.path)
		}
	}
	sort.Slice(flagged, func(i, j int) bool { return flagged[i].path < flagged[j].path })
	for i, e := range flagged {
		if i == MaxFlagged {
			h := sha256.New()
			for _, r := range flagged[i:] {
				fmt.Fprintf(h, "%s\x00%s\x00", r.path, r.flags)
			}
			st[indexMore] = fmt.Sprintf("%d more, %s%s", len(flagged)-i, fpFile, hex.EncodeToString(h.Sum(nil)))
			break
		}
		st[gitIndexPrefix+e.path] = e.flags
	}
	return links
}
