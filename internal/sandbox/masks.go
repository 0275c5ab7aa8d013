package sandbox

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/termtext"
)

// Bounds of the mask walk. Reaching one refuses the run: a walk that stops early cannot say
// what it did not see, and what it did not see is not masked.
const (
	MaxMaskWalk  = 200000 // workspace entries visited, by default (config.yaml limits.mask_walk)
	MaxMaskDepth = 256    // nested directories
	MaxMasks     = 1000   // mounts: each is one --mount argument of the agent's docker create
)

// Why a path is masked.
const (
	ByPattern = "pattern" // a mask pattern matches it
	ByContent = "moved"   // it holds content masked earlier under another path
	ByLink    = "link"    // it is a hard link of masked content
	ByTarget  = "target"  // a symlink a pattern matches leads to it
)

// FileID identifies a file on the host: its device and inode.
type FileID struct{ Dev, Ino uint64 }

// Mask is one workspace path shadowed in the agent's container, and why.
type Mask struct {
	Path    string // workspace-relative, slash-separated
	Dir     bool
	ID      FileID
	Reason  string // ByPattern, ByContent or ByLink
	Pattern string // the pattern that first masked this content
	Origin  string // where Pattern matched it first; Path differs once the content moved
}

// MaskSet is what one walk of the workspace found to mask.
type MaskSet struct {
	Masks []Mask
	// Absent lists the literal anchored patterns (".git/hooks") whose path does not exist:
	// nothing is mounted there, so teardown looks whether the agent put something there.
	Absent  []string
	rootDev uint64
}

// Mounts returns a read-only mount for every mask: the empty file over a file, the empty
// directory over a directory.
func (s *MaskSet) Mounts(emptyFile, emptyDir string) []render.Mount {
	out := make([]render.Mount, 0, len(s.Masks))
	for _, m := range s.Masks {
		src := emptyFile
		if m.Dir {
			src = emptyDir
		}
		out = append(out, render.Mount{Type: "bind", Source: src, Target: render.Workspace + "/" + m.Path, ReadOnly: true})
	}
	return out
}

// Paths returns the masked workspace-relative paths.
func (s *MaskSet) Paths() []string {
	out := make([]string, len(s.Masks))
	for i, m := range s.Masks {
		out[i] = m.Path
	}
	return out
}

// MaskError is why abox could not work out, or could not guarantee, the full set of masks.
// The run is refused.
type MaskError struct {
	Msg  string
	Hint string
}

func (e *MaskError) Error() string    { return e.Msg }
func (e *MaskError) HintText() string { return e.Hint }

func maskErr(hint, format string, args ...any) *MaskError {
	return &MaskError{Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// pattern is one parsed mask pattern.
type pattern struct {
	raw      string
	glob     string
	anchored bool // it holds a slash: matched against the whole path from the workspace root
	dirOnly  bool // a trailing slash: directories only
}

func parsePatterns(raw []string) []pattern {
	var out []pattern
	for _, r := range raw {
		g := strings.Trim(r, "/")
		if g == "" {
			continue
		}
		out = append(out, pattern{raw: r, glob: g, anchored: strings.Contains(g, "/"), dirOnly: strings.HasSuffix(r, "/")})
	}
	return out
}

func (p pattern) matches(rel string, dir bool) bool {
	if p.dirOnly && !dir {
		return false
	}
	subject := path.Base(rel)
	if p.anchored {
		subject = rel
	}
	ok, _ := path.Match(p.glob, subject)
	return ok
}

// literal reports whether p names one path: anchored, without wildcards.
func (p pattern) literal() bool { return p.anchored && !strings.ContainsAny(p.glob, `*?[\`) }

// FindMasks walks the workspace ws and returns every path to mask: the matches of patterns,
// every path that holds content rec says was masked before (wherever it moved), and every
// other link of a masked file. It fails, with a [*MaskError], when it cannot see the whole
// workspace (limit entries, 0 for [MaxMaskWalk]; an unreadable directory) or cannot show that
// the agent cannot reach a masked file another way (links outside the workspace).
//
// Nothing is followed: symlinks are never masked themselves, every entry is looked at with
// fstatat relative to its open parent, and only directories are opened. What a symlink that a
// pattern matches leads to inside the workspace is masked where it is ([ByTarget]): its own
// name may match no pattern.
func FindMasks(ws string, patterns []string, rec *MaskRecord, limit int) (*MaskSet, error) {
	if limit <= 0 {
		limit = MaxMaskWalk
	}
	root, err := os.Open(ws)
	if err != nil {
		return nil, maskErr("check the workspace directory", "opening the workspace: %v", err)
	}
	defer root.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(root.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, maskErr("check the workspace directory", "the workspace %s is not a directory", ws)
	}
	w := newWalker(parsePatterns(patterns), rec, limit, uint64(st.Dev))
	if err := w.dir(root, "", 0, ""); err != nil {
		return nil, err
	}
	if err := w.maskTargets(ws); err != nil {
		return nil, err
	}
	if err := w.followLinks(); err != nil {
		return nil, err
	}
	return w.result()
}

// walker is one walk of the workspace.
type walker struct {
	pats    []pattern
	known   map[recordKey]*RecordEntry
	limit   int
	rootDev uint64

	seen    int
	biggest dirCount // the directory with the most entries so far
	masks   map[FileID]*maskObj
	order   []FileID
	links   map[FileID][]linkPath // non-directories with more than one link: each path seen
	nlink   map[FileID]uint64
	present map[string]bool // the literal patterns' paths, and whether the walk found them
	linked  []Mask          // symlinks a pattern matches: their target is masked (see maskTargets)
}

type dirCount struct {
	rel string
	n   int
}

// maskObj is one masked piece of content and the paths it is masked at.
type maskObj struct {
	dir     bool
	pattern string
	origin  string
	paths   []Mask
}

// linkPath is one path of a file with several links; cover is the pattern of the masked
// directory it lies in, if any.
type linkPath struct {
	rel   string
	cover string
}

func newWalker(pats []pattern, rec *MaskRecord, limit int, rootDev uint64) *walker {
	w := &walker{pats: pats, known: rec.index(pats), limit: limit, rootDev: rootDev,
		masks: map[FileID]*maskObj{}, links: map[FileID][]linkPath{}, nlink: map[FileID]uint64{}, present: map[string]bool{}}
	for _, p := range pats {
		if p.literal() {
			w.present[p.glob] = false
		}
	}
	return w
}

// dir visits the entries of the open directory f at rel. cover is the pattern of the masked
// directory it lies in, "" outside any.
func (w *walker) dir(f *os.File, rel string, depth int, cover string) error {
	names, err := w.names(f, rel)
	if err != nil {
		return err
	}
	for _, name := range names {
		child := joinRel(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(int(f.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return walkErr(child, err)
		}
		if err := w.entry(f, name, child, &st, depth, cover); err != nil {
			return err
		}
	}
	return nil
}

// entry visits one entry: it records its links, masks it when it matches, and descends into
// directories.
func (w *walker) entry(parent *os.File, name, rel string, st *unix.Stat_t, depth int, cover string) error {
	if _, ok := w.present[rel]; ok {
		w.present[rel] = true
	}
	typ := st.Mode & unix.S_IFMT
	if typ == unix.S_IFLNK {
		if cover == "" {
			for _, p := range w.pats {
				if p.matches(rel, false) || p.matches(rel, true) {
					w.linked = append(w.linked, Mask{Path: rel, Pattern: p.raw})
					break
				}
			}
		}
		return nil
	}
	dir := typ == unix.S_IFDIR
	id := FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
	if !dir && st.Nlink > 1 {
		w.links[id] = append(w.links[id], linkPath{rel: rel, cover: cover})
		w.nlink[id] = uint64(st.Nlink)
	}
	if cover == "" {
		if m, ok := w.match(rel, id, dir); ok {
			w.add(id, m)
			if !dir {
				return nil
			}
			cover = m.Pattern
		}
	}
	if !dir {
		return nil
	}
	if depth+1 >= MaxMaskDepth {
		return maskErr("flatten or remove it", "%s is nested deeper than %d directories; abox does not walk further, so it cannot mask what lies below", printable(rel), MaxMaskDepth)
	}
	f, err := openDirAt(parent, name, id)
	if err != nil {
		return walkErr(rel, err)
	}
	defer f.Close()
	return w.dir(f, rel, depth+1, cover)
}

// covered reports whether rel lies in a directory already masked.
func (w *walker) covered(rel string) bool {
	for _, obj := range w.masks {
		for _, m := range obj.paths {
			if m.Dir && strings.HasPrefix(rel, m.Path+"/") {
				return true
			}
		}
	}
	return false
}

// match reports whether the entry at rel is masked: by a pattern, or because it holds content
// masked before.
func (w *walker) match(rel string, id FileID, dir bool) (Mask, bool) {
	m := Mask{Path: rel, Dir: dir, ID: id}
	for _, p := range w.pats {
		if p.matches(rel, dir) {
			m.Reason, m.Pattern, m.Origin = ByPattern, p.raw, rel
			return m, true
		}
	}
	if e := w.known[recordKey{OtherFS: id.Dev != w.rootDev, Ino: id.Ino, Dir: dir}]; e != nil {
		m.Reason, m.Pattern, m.Origin = ByContent, e.Pattern, e.Origin
		return m, true
	}
	return m, false
}

// add masks m, one more path of the content id.
func (w *walker) add(id FileID, m Mask) {
	obj := w.masks[id]
	if obj == nil {
		obj = &maskObj{dir: m.Dir, pattern: m.Pattern, origin: m.Origin}
		w.masks[id] = obj
		w.order = append(w.order, id)
	}
	obj.paths = append(obj.paths, m)
}

// names reads the names in f, counting them against the walk's limit, sorted.
func (w *walker) names(f *os.File, rel string) ([]string, error) {
	var names []string
	for {
		batch, err := f.Readdirnames(1024)
		names = append(names, batch...)
		w.seen += len(batch)
		if w.seen > w.limit {
			return nil, w.tooMany(f, rel, len(names))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, walkErr(rel, err)
		}
	}
	if len(names) > w.biggest.n {
		w.biggest = dirCount{rel: rel, n: len(names)}
	}
	sort.Strings(names)
	return names, nil
}

// tooMany is the refusal at the walk's limit. It names the directory with the most entries,
// counting the rest of the one being read (names only, up to ten times the limit).
func (w *walker) tooMany(f *os.File, rel string, n int) error {
	for n < 10*w.limit {
		batch, err := f.Readdirnames(4096)
		n += len(batch)
		if err != nil {
			break
		}
	}
	big := dirCount{rel: rel, n: n}
	if w.biggest.n > big.n {
		big = w.biggest
	}
	where := "the workspace root"
	if big.rel != "" {
		where = big.rel
	}
	return maskErr(fmt.Sprintf("remove what does not belong in %s, or raise limits.mask_walk in config.yaml", printable(where)),
		"the workspace holds more than %d entries (limits.mask_walk), %d of them in %s; abox must see every entry to know what to mask",
		w.limit, big.n, printable(where))
}

// result flattens the walk into a MaskSet, refusing more than [MaxMasks] mounts.
func (w *walker) result() (*MaskSet, error) {
	s := &MaskSet{rootDev: w.rootDev}
	perPattern := map[string]int{}
	for _, id := range w.order {
		w.masks[id].links()
		for _, m := range w.masks[id].paths {
			s.Masks = append(s.Masks, m)
			perPattern[m.Pattern]++
		}
	}
	sort.SliceStable(s.Masks, func(i, j int) bool { return s.Masks[i].Path < s.Masks[j].Path })
	if len(s.Masks) > MaxMasks {
		top := ""
		for p, n := range perPattern {
			if top == "" || n > perPattern[top] || n == perPattern[top] && p < top {
				top = p
			}
		}
		return nil, maskErr("narrow mounts.mask, or remove the files that match",
			"the masks match %d paths, more than the %d abox mounts (%q matches %d)", len(s.Masks), MaxMasks, top, perPattern[top])
	}
	for _, m := range s.Masks {
		if !mountable(m) {
			return nil, maskErr(fmt.Sprintf("rename %s on the host to a name without a carriage return", shellQuote(m.Path)),
				"masked %s cannot be mounted where it is: docker reads a --mount field's CR LF as LF, so the mask would cover another path", printable(m.Path))
		}
	}
	for _, p := range w.pats {
		if p.literal() && !w.present[p.glob] {
			s.Absent = append(s.Absent, p.raw)
		}
	}
	return s, nil
}

// mountable reports whether the docker CLI reads m's mount back with the target abox means. It
// parses --mount as CSV, whose reader turns CR LF into LF even inside a quoted field: a mask
// under a name with CR LF would shadow another path, which the runtime creates, and leave the
// content readable where it is.
func mountable(m Mask) bool {
	target := render.Workspace + "/" + m.Path
	arg := render.Mount{Type: "bind", Source: "/", Target: target, ReadOnly: true}.Arg()
	fields, err := csv.NewReader(strings.NewReader(arg)).Read()
	return err == nil && slices.Contains(fields, "target="+target)
}

// openDirAt opens the directory name in parent without following a link, and checks that it
// is the entry that was looked at.
func openDirAt(parent *os.File, name string, want FileID) (*os.File, error) {
	fd, err := unix.Openat(int(parent.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != want.Dev || uint64(st.Ino) != want.Ino {
		unix.Close(fd)
		return nil, errors.New("it changed while abox looked at it")
	}
	return os.NewFile(uintptr(fd), name), nil
}

// walkErr is the refusal for an entry the walk could not look at.
func walkErr(rel string, err error) error {
	if rel == "" {
		rel = "the workspace root"
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, os.ErrPermission) {
		return maskErr(fmt.Sprintf("make it readable (`chmod u+rx %s`) or remove it", shellQuote(rel)),
			"cannot read %s: permission denied; abox must see every entry to know what to mask", printable(rel))
	}
	return maskErr(fmt.Sprintf("check %s, then run again", printable(rel)),
		"cannot look at %s: %v; abox must see every entry to know what to mask", printable(rel), err)
}

// printable escapes what a workspace name may hold that a terminal would interpret.
func printable(s string) string { return termtext.Line(s) }

// shellQuote quotes a workspace name for a command in a hint.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(termtext.Line(s), "'", `'\''`) + "'"
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
