package watch

import (
	"path"
	"strings"
)

// Reach says where in the workspace a catalog [CatalogEntry] applies.
type Reach int

const (
	// AtRoot entries apply at the workspace root only: what a tool reads from the top of the
	// repository (CI, git's own files, hook managers, the manifest).
	AtRoot Reach = iota
	// AtPackage entries apply at the root and at the top of every workspace package (a
	// directory holding one of [Markers]), since a tool run there — npm in a workspace
	// package, make -C, an editor opened on the subdirectory — reads them there.
	AtPackage
	// InVenv entries apply inside every virtualenv, a directory holding pyvenv.cfg, whatever
	// its name: what its python runs at every start.
	InVenv
	// InEveryDir entries are file names read in every directory a tool reaches (pytest's
	// conftest.py, git's .gitattributes, agents' instruction files).
	InEveryDir
)

func (r Reach) String() string {
	return [...]string{"at the root", "at the root and the top of each package", "in each virtualenv", "in every directory"}[r]
}

// CatalogEntry is one thing in the workspace that runs, or steers what runs, outside the sandbox:
// where it is, which tool reads it, when, and why that runs code.
type CatalogEntry struct {
	// Pattern is relative to where the entry applies (see Reach). Its segments may hold
	// path.Match globs; a trailing slash names a directory, walked whole.
	Pattern string
	Reach   Reach
	// Class groups entries for a person and for the tests: a toolchain of manifest.Toolchains
	// (its package managers and build tools), or build, ci, git, editor, agent, shell, abox.
	Class string
	Tool  string // what reads it
	When  string // when it does, on the host
	Why   string // what in it runs code, or steers what runs
}

// Markers are the names that make a directory a workspace package ([AtPackage]): the manifest
// of a toolchain's package manager or build tool, a makefile, a justfile, a CMake project.
// What runs there is read from the package's top, as from the workspace root.
var Markers = []string{
	"package.json", "deno.json", "pyproject.toml", "setup.py", "Cargo.toml", "go.mod", "pom.xml",
	"build.gradle", "build.gradle.kts", "Gemfile", "composer.json", "*.csproj", "*.fsproj",
	"Makefile", "GNUmakefile", "makefile", "justfile", "Justfile", "CMakeLists.txt",
}

// Catalog is what abox knows to run outside the sandbox: every [CatalogEntry]. The live watch
// ([Take]), the run's summary, doctor and an isolated run's review ([Lookup]) all read it; the
// user's own patterns (defaults.watch, mounts.watch) come on top. No catalog is complete, which
// is why a new hidden directory is reported too ([Snapshot.Hidden]).
func Catalog() []CatalogEntry { return append([]CatalogEntry(nil), catalog...) }

// isMarker reports whether name makes its directory a workspace package ([Markers]).
func isMarker(name string) bool {
	for _, m := range Markers {
		if ok, _ := path.Match(m, name); ok {
			return true
		}
	}
	return false
}

// Lookup returns the catalog entry that covers rel, a slash-separated path in a workspace or a
// branch, wherever rel lies: an [AtRoot] entry at the root only, an [AtPackage] or [InVenv] one
// below any directory (a reviewer cannot always tell a package or a virtualenv, and too much
// is a longer list), an [InEveryDir] one by its last name. A path below an entry's (a file in
// .claude/) is covered by it. venv reports the directories taken for virtualenvs; nil takes
// every one.
func Lookup(rel string, venv func(dir string) bool) (CatalogEntry, bool) {
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	for _, reach := range []Reach{AtRoot, AtPackage, InVenv, InEveryDir} {
		for _, e := range catalog {
			if e.Reach != reach {
				continue
			}
			switch reach {
			case AtRoot:
				if covers(e.Pattern, segs) {
					return e, true
				}
			case InEveryDir:
				if ok, _ := path.Match(e.Pattern, segs[len(segs)-1]); ok {
					return e, true
				}
			default:
				for i := range segs {
					dir := strings.Join(segs[:i], "/")
					if (reach == AtPackage || venv == nil || venv(dir)) && covers(e.Pattern, segs[i:]) {
						return e, true
					}
				}
			}
		}
	}
	return CatalogEntry{}, false
}

// covers reports whether the pattern names segs, or a directory holding them.
func covers(pattern string, segs []string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	if len(ps) > len(segs) {
		return false
	}
	for i, p := range ps {
		if ok, _ := path.Match(p, segs[i]); !ok {
			return false
		}
	}
	return true
}

// HiddenDir returns the first directory of rel whose name starts with a dot and that the
// catalog names nothing in ("tools/.foo"), or "". No catalog is complete: a tool's
// configuration in a hidden directory abox does not know is worth a look.
func HiddenDir(rel string) string {
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	for i, s := range segs[:len(segs)-1] {
		if strings.HasPrefix(s, ".") && !knownDir(s, i == 0) {
			return strings.Join(segs[:i+1], "/")
		}
	}
	return ""
}

// knownDir reports whether the catalog names something in a directory called name at the root
// (root) or at the top of a package, or whether it is .git, which the git state covers.
func knownDir(name string, root bool) bool {
	if name == ".git" {
		return true
	}
	for _, e := range catalog {
		if e.Reach != AtPackage && !(root && e.Reach == AtRoot) {
			continue
		}
		first, _, _ := strings.Cut(e.Pattern, "/")
		if ok, _ := path.Match(first, name); ok {
			return true
		}
	}
	return false
}
