package watch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/aboxhq/abox/internal/linkwalk"
)

// Bounds of [Files], so that what the agent plants under a watched path (a million files, a
// directory tree a thousand levels deep) cannot stall the snapshot. A pattern that reaches one
// stops there and is reported as [Capped]: what lies beyond was not looked at, and a snapshot
// says so rather than pass it over in silence.
const (
	MaxPerPattern = 500  // entries (files, directories, links) one pattern visits
	MaxDirEntries = 4096 // names read from one directory
	MaxDepth      = 32   // directory levels below the workspace root
)

// Capped is a pattern that hit one of the bounds; the rest of what it matches was not read.
type Capped struct {
	Pattern string `json:"pattern"`
	Files   int    `json:"files"`  // how many entries were visited
	Reason  string `json:"reason"` // which bound: "more than 500 entries", …
}

// Files fingerprints what patterns match in the workspace ws, keyed by slash-separated path
// relative to ws.
//
// A pattern is a relative path whose segments may hold path.Match globs ("*.code-workspace",
// ".github/workflows"); it is anchored at the workspace root, and a trailing slash makes it
// match directories only. A matched directory is walked. Symlinks are never traversed, neither
// to a file nor to a directory nor as a parent segment: the link is fingerprinted by its target
// (and, when the target is in the workspace, by what it leads to) instead, so a retargeted
// link is a change. masked reports paths the sandbox masks: such a path is recorded as there
// ("masked") but never read, since its content is the user's secret and the agent cannot write
// it while it is masked. A masked path that appears is therefore still an added file: the agent
// can create one (.envrc, which the default mask .env* covers from the next run on) in a run
// that began without it.
func Files(ws string, patterns []string, masked func(rel string) bool) (map[string]string, []Capped) {
	fp := newFingerprinter(ws)
	defer fp.close()
	return files(fp, patterns, masked)
}

func files(fp *fingerprinter, patterns []string, masked func(rel string) bool) (map[string]string, []Capped) {
	if masked == nil {
		masked = func(string) bool { return false }
	}
	out := map[string]string{}
	var capped []Capped
	seen := map[string]bool{}
	for _, p := range patterns {
		if seen[p] || !validPattern(p) {
			continue
		}
		seen[p] = true
		w := &walker{fp: fp, masked: masked, out: out, left: MaxPerPattern}
		for _, rel := range w.expand(p) {
			w.visit(rel)
		}
		if w.capped != "" {
			capped = append(capped, Capped{Pattern: p, Files: MaxPerPattern - w.left, Reason: w.capped})
		}
	}
	return out, capped
}

func validPattern(p string) bool {
	clean := strings.Trim(p, "/")
	if clean == "" || strings.HasPrefix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(clean, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return false
		}
		if _, err := path.Match(seg, ""); err != nil {
			return false
		}
	}
	return true
}

// walker visits what one pattern matches, within the pattern's budget.
type walker struct {
	fp     *fingerprinter
	masked func(string) bool
	out    map[string]string
	left   int      // entries the pattern may still visit
	capped string   // the bound that stopped it, or ""
	chain  []string // the directories being walked, by their path in the workspace
}

func (w *walker) full(format string, args ...any) {
	if w.capped == "" {
		w.capped = fmt.Sprintf(format, args...)
	}
}

func (w *walker) abs(rel string) string { return filepath.Join(w.fp.ws, filepath.FromSlash(rel)) }

// expand returns the workspace-relative paths a pattern matches, segment by segment. A
// segment that is a symlink ends the expansion there: the link itself is the match, recorded by
// its target and never traversed.
func (w *walker) expand(pattern string) []string { return w.expandFrom("", pattern) }

// expandFrom is [walker.expand] of a pattern relative to the directory base.
func (w *walker) expandFrom(base, pattern string) []string {
	dirOnly := strings.HasSuffix(pattern, "/")
	segs := strings.Split(strings.Trim(pattern, "/"), "/")
	cur, links := []string{base}, []string{}
	for i, seg := range segs {
		last := i == len(segs)-1
		var next []string
		for _, rel := range cur {
			for _, name := range w.matchSegment(rel, seg) {
				child := path.Join(rel, name)
				st, err := os.Lstat(w.abs(child))
				switch {
				case err != nil:
				case st.Mode()&fs.ModeSymlink != 0:
					links = append(links, child)
				case last && dirOnly && !st.IsDir():
				case last || st.IsDir():
					next = append(next, child)
				}
			}
		}
		cur = next
	}
	return dedupe(append(cur, links...))
}

// matchSegment lists the names in the directory rel matching the glob seg (or seg itself when
// it has no glob character and exists).
func (w *walker) matchSegment(rel, seg string) []string {
	dir := w.abs(rel)
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return nil
	}
	if !strings.ContainsAny(seg, `*?[\`) {
		if _, err := os.Lstat(filepath.Join(dir, seg)); err == nil {
			return []string{seg}
		}
		return nil
	}
	names, err := w.readDir(rel)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if ok, _ := path.Match(seg, n); ok {
			out = append(out, n)
		}
	}
	return out
}

// visit fingerprints rel, or every entry under it when it is a directory, depth first in name
// order, until the budget runs out.
func (w *walker) visit(rel string) { w.visitAs(rel, rel) }

// visitAs is [walker.visit] of real, keyed as key: what a symlink to a directory leads to is
// keyed under the link's path, as the tool that reads the link sees it.
func (w *walker) visitAs(key, real string) {
	if w.capped != "" {
		return
	}
	if w.masked(key) || w.masked(real) {
		w.out[key] = fpMasked
		return
	}
	if w.left == 0 {
		w.full("more than %d entries", MaxPerPattern)
		return
	}
	w.left--
	p := w.abs(real)
	st, err := os.Lstat(p)
	switch {
	case err != nil:
		w.out[key] = fpUnread + errText(err)
		return
	case st.Mode()&fs.ModeSymlink != 0:
		w.out[key] = w.fp.of(p)
		w.behind(key, real)
		return
	case !st.IsDir():
		w.out[key] = w.fp.of(p)
		return
	case strings.Count(key, "/") >= MaxDepth:
		w.full("deeper than %d levels at %s", MaxDepth, key)
		return
	}
	w.visitDir(key, real)
}

// visitDir visits the entries of the directory real, keyed under key.
func (w *walker) visitDir(key, real string) {
	names, err := w.readDir(real)
	if err != nil {
		w.out[key] = fpUnread + errText(err)
		return
	}
	w.chain = append(w.chain, real)
	defer func() { w.chain = w.chain[:len(w.chain)-1] }()
	for _, n := range names {
		w.visitAs(path.Join(key, n), path.Join(real, n))
	}
}

// holds reports whether the directory dir is, or holds, real or a directory being walked: a
// link to it would walk in a loop.
func (w *walker) holds(dir, real string) bool {
	if dir == "." {
		return true
	}
	for _, p := range append(w.chain, real) {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// behind walks what the symlink real leads to when that is a directory in the workspace,
// keyed under key: the tool that reads .claude/settings.json through .claude -> tools/claude
// reads tools/claude/settings.json, so a change there is a change of .claude/settings.json.
// Where the link leads is walked as the kernel walks it ([linkwalk]); a link out of the
// workspace, or one that leads nowhere, is recorded by its target alone ([fingerprinter.of]).
// A link to a directory that holds it, or one being walked (the top, a parent: a loop), is
// recorded by its target alone; the pattern's budget bounds the rest.
func (w *walker) behind(key, real string) {
	if w.fp.root == nil {
		return
	}
	d := w.fp.links.Link(real, w.fp.lookup(real))
	if d.Kind != linkwalk.Inside || w.holds(d.Path, real) {
		return
	}
	if st, err := w.fp.root.Stat(d.Path); err != nil || !st.IsDir() {
		return
	}
	if strings.Count(key, "/") >= MaxDepth {
		w.full("deeper than %d levels at %s", MaxDepth, key)
		return
	}
	w.visitDir(key, d.Path)
}

// readDir returns the sorted names in the directory rel, opened without following a link; a
// directory of more than [MaxDirEntries] names caps the pattern and yields none.
func (w *walker) readDir(rel string) ([]string, error) {
	f, err := os.OpenFile(w.abs(rel), os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(MaxDirEntries + 1)
	if len(names) > MaxDirEntries {
		w.full("%s holds more than %d entries", displayDir(rel), MaxDirEntries)
		return nil, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func displayDir(rel string) string {
	if rel == "" {
		return "the workspace root"
	}
	return rel
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
