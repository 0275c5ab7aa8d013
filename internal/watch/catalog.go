package watch

import (
	"strings"
)

// Reach says where in the workspace a catalog [CatalogEntry] applies.
type Reach int

const (
	// AtRoot entries apply at the workspace root only: what a tool reads from the top of the
	// repository (CI, git's own files, hook managers, the manifest).
	AtRoot Reach = iota
	// AtPackage entries apply at the root, at the top of every workspace package (a directory
	// holding one of [Markers]) and in every directory between the two, since a tool run there
	// — npm in a workspace package, make -C, an editor opened on the subdirectory — reads them
	// there, and many look for them upward from where they run: cargo's .cargo/config.toml in
	// every directory above, MSBuild's first Directory.Build.props above a project, Maven's
	// nearest .mvn/, go's first go.work, Bundler's Gemfile, just's justfile, docker compose's
	// file, direnv's .envrc. crates/.cargo/config.toml above crates/foo/Cargo.toml runs in
	// `cargo build` there.
	AtPackage
	// InVenv entries apply inside every virtualenv, a directory holding pyvenv.cfg, whatever
	// its name: what its python runs at every start.
	InVenv
	// InEveryDir entries are file names read in every directory a tool reaches (pytest's
	// conftest.py, git's .gitattributes, agents' instruction files).
	InEveryDir
)

func (r Reach) String() string {
	return [...]string{"at the root", "at the root, the top of each package and every directory between", "in each virtualenv", "in every directory"}[r]
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
	"Makefile", "GNUmakefile", "makefile", anyCase("justfile"), "CMakeLists.txt",
}

// anyCase is a pattern that matches name in any case, for a tool that compares the names of a
// directory with its own without regard to case (just: JUSTFILE is a justfile). On Linux a name
// is its bytes: every other entry names exactly what its tool opens.
func anyCase(name string) string {
	var b strings.Builder
	for _, c := range name {
		if lo, up := strings.ToLower(string(c)), strings.ToUpper(string(c)); lo != up {
			b.WriteString("[" + lo + up + "]")
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Catalog is what abox knows to run outside the sandbox: every [CatalogEntry]. The live watch
// ([Take]), the run's summary, doctor and an isolated run's review ([Lookup]) all read it; the
// user's own patterns (defaults.watch, mounts.watch) come on top. No catalog is complete, which
// is why a new hidden directory or file is reported too ([Snapshot.Hidden]).
func Catalog() []CatalogEntry { return append([]CatalogEntry(nil), catalog...) }

// isMarker reports whether name makes its directory a workspace package ([Markers]).
func isMarker(name string) bool {
	for _, m := range Markers {
		if globMatch(m, name) {
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
				if globMatch(e.Pattern, segs[len(segs)-1]) {
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
		if !globMatch(p, segs[i]) {
			return false
		}
	}
	return true
}

// HiddenWhy says why rel lies where no catalog entry looks but the net for what the catalog
// does not know does ([Snapshot.Hidden]), for a reviewer of a branch who cannot tell a package:
// in its first directory whose name starts with a dot and that the catalog names nothing in
// ("in tools/.foo/, a hidden directory the catalog does not know"); in an entry of a hidden
// directory the catalog knows for something else (.github/ISSUE_TEMPLATE/); or a hidden file
// no entry names and that is not one of [inertHidden] (".toolconf"). "" when none of these.
func HiddenWhy(rel string) string {
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	for i, s := range segs[:len(segs)-1] {
		if !strings.HasPrefix(s, ".") {
			continue
		}
		if !knownDir(s, i == 0) {
			return "in " + strings.Join(segs[:i+1], "/") + "/, a hidden directory the catalog does not know"
		}
		if !coversWhole(s, i == 0) && !coversIn(s, segs[i+1], i == 0) && !inert(segs[i+1]) {
			return "in " + strings.Join(segs[:i+1], "/") + "/, beside what the catalog knows there"
		}
	}
	if _, named := Lookup(rel, nil); !named && hiddenFile(segs[len(segs)-1]) {
		return "a hidden file the catalog does not know"
	}
	return ""
}

// inertHidden are the hidden names the net leaves out: files that only tell a tool what to
// skip or how to lay text out, which a project adds to every package (.gitignore) and which
// run nothing.
var inertHidden = []string{".*ignore", ".gitkeep", ".keep", ".editorconfig"}

// hiddenFile reports whether name is a hidden name the net lists when no entry names it.
func hiddenFile(name string) bool {
	return strings.HasPrefix(name, ".") && name != "." && name != ".." && name != ".git" && !inert(name)
}

// inert reports whether name is one of [inertHidden].
func inert(name string) bool {
	for _, p := range inertHidden {
		if globMatch(p, name) {
			return true
		}
	}
	return false
}

// applies reports whether e applies at a place of the search: the root (root) or another
// package top or directory on the way to one.
func applies(e CatalogEntry, root bool) bool {
	return e.Reach == AtPackage || (root && e.Reach == AtRoot)
}

// knownDir reports whether the catalog names something in a directory called name at the root
// (root) or at another place of the search, or whether it is .git, which the git state covers.
func knownDir(name string, root bool) bool {
	if name == ".git" {
		return true
	}
	for _, e := range catalog {
		if !applies(e, root) {
			continue
		}
		first, _, _ := strings.Cut(e.Pattern, "/")
		if globMatch(first, name) {
			return true
		}
	}
	return false
}

// coversWhole reports whether an entry names the directory called name whole (.claude/), or it
// is .git.
func coversWhole(name string, root bool) bool {
	if name == ".git" {
		return true
	}
	for _, e := range catalog {
		if !strings.Contains(strings.TrimSuffix(e.Pattern, "/"), "/") && globMatch(strings.TrimSuffix(e.Pattern, "/"), name) && applies(e, root) {
			return true
		}
	}
	return false
}

// coversIn reports whether an entry names child in the directory called name
// (.github/workflows/ covers workflows in .github).
func coversIn(name, child string, root bool) bool {
	for _, e := range catalog {
		segs := strings.Split(strings.Trim(e.Pattern, "/"), "/")
		if len(segs) < 2 || !applies(e, root) {
			continue
		}
		if globMatch(segs[0], name) && globMatch(segs[1], child) {
			return true
		}
	}
	return false
}
