package watch

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Bounds of the search for where the catalog applies. A bound that is hit is reported as one
// [Capped] named [SearchName], and what lies beyond it was not searched: a search may report
// too much, never hide what it did not look at.
const (
	MaxSearch   = 200000 // workspace entries looked at
	MaxPackages = 500    // workspace packages and virtualenvs taken
	MaxNamed    = 1000   // files found by their name in every directory ([InEveryDir])
)

// SearchName is the [Capped] pattern under which the search reports the bounds it hit.
const SearchName = "the search for packages"

// match is where a catalog pattern applies: base, a path the search found in the workspace,
// and rest, what of the pattern lies below it ("" when base is all of it).
type match struct{ base, rest string }

// found is what the search found: the matches, in the order they are fingerprinted, the hidden
// directories of the root and of every package, and the bounds it hit.
type found struct {
	matches []match
	hidden  []string
	bounds  []string
	seen    int // entries looked at
	named   int // files found by their name ([InEveryDir])
}

// search walks the workspace for where the catalog applies: the root, every workspace package
// (a directory holding one of [Markers]) and every directory between the two, and every
// virtualenv (one holding pyvenv.cfg), down to [MaxDepth] levels, following no link. It does
// not enter .git (the git state reads it) or node_modules (installed dependencies, whose
// packages are not the workspace's); everything else it enters, masked directories too, whose
// names it reads and whose content [files] records as masked. At each of those places it lists
// what the catalog does not know ([found.placeHidden]).
func search(ws string) found {
	var f found
	places := 0
	// visit returns whether dir is a package or lies above one, and false once the search stops.
	var visit func(dir, rel string, depth int) (bool, bool)
	visit = func(dir, rel string, depth int) (bool, bool) {
		entries, ok := readNested(dir, MaxSearch-f.seen+1)
		if !ok {
			if rel != "" {
				f.bound("%s is unreadable", strings.TrimSuffix(rel, "/"))
			}
			return false, true
		}
		if f.seen += len(entries); f.seen > MaxSearch {
			f.bound("more than %d entries", MaxSearch)
			return false, false
		}
		pkg, venv := rel == "", false
		for _, e := range entries {
			pkg = pkg || isMarker(e.Name())
			venv = venv || e.Name() == "pyvenv.cfg"
		}
		if (pkg && rel != "") || venv {
			if places++; places > MaxPackages {
				f.bound("more than %d packages and virtualenvs", MaxPackages)
				return false, false
			}
		}
		f.placeAll(dir, rel, entries, where{root: rel == "", pkg: pkg, venv: venv, every: true})
		if f.named > MaxNamed {
			f.bound("more than %d files found by their name", MaxNamed)
			return pkg, false
		}
		above, more := false, true
		for _, e := range entries {
			if !e.IsDir() || e.Name() == ".git" || e.Name() == "node_modules" {
				continue
			}
			if depth+1 > MaxDepth {
				f.bound("%s is nested deeper than %d directories", rel+e.Name(), MaxDepth)
				continue
			}
			below, ok := visit(filepath.Join(dir, e.Name()), rel+e.Name()+"/", depth+1)
			above = above || below
			if !ok {
				more = false
				break
			}
		}
		if above && !pkg { // between the root and a package: what tools look for upward
			f.placeAll(dir, rel, entries, where{pkg: true})
		}
		return pkg || above, more
	}
	visit(ws, "", 0)
	return f
}

// where says which of the catalog's reaches apply in a directory.
type where struct{ root, pkg, venv, every bool }

// placeAll places every entry of the directory rel (dir on the host).
func (f *found) placeAll(dir, rel string, entries []fs.DirEntry, w where) {
	for _, e := range entries {
		if unnamed := f.place(rel, e, w); w.root || w.pkg {
			f.placeHidden(dir, rel, e, w.root, unnamed)
		}
	}
}

// place adds what the catalog says of the entry e of the directory rel (ending in "/", or the
// root's ""): the patterns of the reaches w holds whose first segment is e's name, and a file
// read in every directory. It reports whether no pattern of the root's or a package's named
// it.
func (f *found) place(rel string, e fs.DirEntry, w where) bool {
	name, unnamed := e.Name(), true
	for _, c := range catalog {
		switch {
		case c.Reach == AtRoot && !w.root, c.Reach == AtPackage && !w.pkg, c.Reach == InVenv && !w.venv:
			continue
		case c.Reach == InEveryDir:
			if globMatch(c.Pattern, name) && w.every {
				f.named++
				f.add(rel+name, "")
			}
			if globMatch(c.Pattern, name) {
				unnamed = false
			}
			continue
		}
		first, rest, _ := strings.Cut(c.Pattern, "/")
		if globMatch(first, name) {
			f.add(rel+name, rest)
			unnamed = unnamed && c.Reach == InVenv
		}
	}
	return unnamed
}

// placeHidden lists, at the root (root) or another place of the search, what of e the catalog
// does not know: no catalog is complete. A directory whose name starts with a dot and that no
// entry names anything in is listed ("tools/.foo/"); so is each entry of a hidden directory the
// catalog knows for something else that no entry names (".github/ISSUE_TEMPLATE/", beside
// .github/workflows/), and a hidden file no entry names (".toolconf") unless it is inert
// ([inertHidden]). The list is of names only, one level deep: what appears in a listed
// directory later is not, which keeps it to what a project holds at the top of its packages.
// unnamed says that no pattern named e.
func (f *found) placeHidden(dir, rel string, e fs.DirEntry, root, unnamed bool) {
	name := e.Name()
	switch {
	case !hiddenFile(name):
	case !e.IsDir():
		if unnamed {
			f.hidden = append(f.hidden, rel+name)
		}
	case !knownDir(name, root):
		f.hidden = append(f.hidden, rel+name+"/")
	case !coversWhole(name, root):
		inner, ok := readNested(filepath.Join(dir, name), MaxDirEntries+1)
		if !ok || len(inner) > MaxDirEntries {
			f.hidden = append(f.hidden, rel+name+"/")
			return
		}
		f.seen += len(inner)
		for _, c := range inner {
			if coversIn(name, c.Name(), root) || inert(c.Name()) {
				continue
			}
			if c.IsDir() {
				f.hidden = append(f.hidden, rel+name+"/"+c.Name()+"/")
			} else {
				f.hidden = append(f.hidden, rel+name+"/"+c.Name())
			}
		}
	}
}

func (f *found) add(base, rest string) {
	f.matches = append(f.matches, match{base: base, rest: rest})
}

// bound records a bound the search hit; the first few say which.
func (f *found) bound(format string, args ...any) {
	if len(f.bounds) < 3 {
		f.bounds = append(f.bounds, fmt.Sprintf(format, args...))
	} else if len(f.bounds) == 3 {
		f.bounds = append(f.bounds, "and more")
	}
}

// capped is the search's [Capped], or nil when it hit no bound.
func (f *found) capped() []Capped {
	if len(f.bounds) == 0 {
		return nil
	}
	return []Capped{{Pattern: SearchName, Files: f.seen, Reason: strings.Join(f.bounds, "; ")}}
}

// catalogFiles fingerprints what the catalog's matches name into out, each match within a
// pattern's budget ([MaxPerPattern]), and returns the matches that hit a bound. base is a path
// the search found: a directory is walked, anything else fingerprinted; the rest of a pattern
// below a directory is expanded as [Files] expands one, never through a link. A match that is
// one of the user's patterns ([Files] took it already) is left out.
func catalogFiles(fp *fingerprinter, matches []match, patterns []string, masked func(string) bool, out map[string]string) []Capped {
	if masked == nil {
		masked = func(string) bool { return false }
	}
	var capped []Capped
	seen := map[string]bool{}
	for _, p := range patterns {
		seen[strings.Trim(p, "/")] = true
	}
	for _, m := range matches {
		name := m.base
		if m.rest != "" {
			name += "/" + m.rest
		}
		if seen[strings.TrimSuffix(name, "/")] {
			continue
		}
		seen[strings.TrimSuffix(name, "/")] = true
		w := &walker{fp: fp, masked: masked, out: out, left: MaxPerPattern}
		targets := []string{m.base}
		if m.rest != "" {
			targets = below(w, m)
		}
		for _, rel := range targets {
			w.visit(rel)
		}
		if w.capped != "" {
			capped = append(capped, Capped{Pattern: name, Files: MaxPerPattern - w.left, Reason: w.capped})
		}
	}
	return capped
}

// below returns what the rest of m's pattern names under its base. A base that is a symlink is
// itself the target, fingerprinted by where it leads and never entered, since the tool follows
// it; a regular file is not what the pattern names.
func below(w *walker, m match) []string {
	st, err := os.Lstat(w.abs(m.base))
	switch {
	case err != nil:
		return nil
	case st.Mode()&fs.ModeSymlink != 0:
		return []string{m.base}
	case !st.IsDir():
		return nil
	}
	return w.expandFrom(m.base, m.rest)
}
