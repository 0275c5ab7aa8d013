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
	left   int    // entries the pattern may still visit
	capped string // the bound that stopped it, or ""
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
func (w *walker) visit(rel string) {
	if w.capped != "" {
		return
	}
	if w.masked(rel) {
		w.out[rel] = fpMasked
		return
	}
	if w.left == 0 {
		w.full("more than %d entries", MaxPerPattern)
		return
	}
	w.left--
	p := w.abs(rel)
	st, err := os.Lstat(p)
	switch {
	case err != nil:
		w.out[rel] = fpUnread + errText(err)
		return
	case !st.IsDir():
		w.out[rel] = w.fp.of(p)
		return
	case strings.Count(rel, "/") >= MaxDepth:
		w.full("deeper than %d levels at %s", MaxDepth, rel)
		return
	}
	names, err := w.readDir(rel)
	if err != nil {
		w.out[rel] = fpUnread + errText(err)
		return
	}
	for _, n := range names {
		w.visit(path.Join(rel, n))
	}
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
