package watch

import (
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/wsfile"
)

// What a virtualenv's python runs at every start besides the files the catalog names: site.py
// executes each line of a .pth file in site-packages that starts with "import" (CPython's
// site.addpackage), and such a line imports modules that live beside it — virtualenv's
// _virtualenv.pth imports _virtualenv.py, setuptools' distutils-precedence.pth imports
// _distutils_hack, an editable install's .pth its __editable__ finder. The catalog names the
// usual ones; the rest are found by reading the .pth files the snapshot holds.

// MaxPthModules bounds the modules one .pth file's import lines name that are watched.
const MaxPthModules = 16

// pthImport finds what a .pth line's statements import: "import a, b.c as d" and
// "__import__('e')" or importlib.import_module("f").
var (
	pthImport   = regexp.MustCompile(`^\s*import\s+(.+)$`)
	pthDunder   = regexp.MustCompile(`(?:__import__|import_module)\(\s*['"]([A-Za-z_][A-Za-z0-9_.]*)['"]`)
	pythonIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// pthModules names the top-level modules the lines of a .pth file that site.py executes import,
// at most [MaxPthModules], sorted; more says there were more.
func pthModules(data string) (mods []string, more bool) {
	seen := map[string]bool{}
	add := func(name string) {
		top, _, _ := strings.Cut(strings.TrimSpace(name), ".")
		if pythonIdent.MatchString(top) && !seen[top] {
			seen[top] = true
			mods = append(mods, top)
		}
	}
	for _, line := range strings.Split(data, "\n") {
		if !strings.HasPrefix(line, "import ") && !strings.HasPrefix(line, "import\t") {
			continue // not executed: a path, or a comment
		}
		for _, stmt := range strings.Split(line, ";") {
			if m := pthImport.FindStringSubmatch(stmt); m != nil {
				for _, name := range strings.Split(m[1], ",") {
					name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
					add(name)
				}
			}
		}
		for _, m := range pthDunder.FindAllStringSubmatch(line, -1) {
			add(m[1])
		}
	}
	sort.Strings(mods)
	if len(mods) > MaxPthModules {
		return mods[:MaxPthModules], true
	}
	return mods, false
}

// isPth reports whether rel is a .pth file directly in a site-packages directory.
func isPth(rel string) bool {
	return strings.HasSuffix(rel, ".pth") && path.Base(path.Dir(rel)) == "site-packages"
}

// watchPthImports fingerprints into out, beside each .pth file out holds, the modules its import
// lines name: the module's source, its package directory (walked), a sourceless or cached
// bytecode file (a .pyc python loads when its header matches the source's size and time, which
// the agent can write) and an extension module — each .pth within one pattern's budget
// ([MaxPerPattern]). It returns the .pth files that hit a bound.
func watchPthImports(fp *fingerprinter, out map[string]string, masked func(string) bool) []Capped {
	if fp.root == nil {
		return nil
	}
	if masked == nil {
		masked = func(string) bool { return false }
	}
	var pths []string
	for rel := range out {
		if isPth(rel) && !masked(rel) {
			pths = append(pths, rel)
		}
	}
	sort.Strings(pths)
	var capped []Capped
	for _, rel := range pths {
		data, err := wsfile.ReadIn(fp.root, rel, MaxHashBytes)
		if err != nil {
			continue // fingerprinted as it is: unreadable, a link out, too large
		}
		mods, more := pthModules(string(data))
		w := &walker{fp: fp, masked: masked, out: out, left: MaxPerPattern}
		dir := path.Dir(rel)
		for _, m := range mods {
			for _, p := range []string{m + ".py", m + "/", m + ".pyc", m + ".*.so", m + ".so", "__pycache__/" + m + ".*"} {
				for _, t := range w.expandFrom(dir, p) {
					w.visit(t)
				}
			}
		}
		if more {
			w.full("imports more than %d modules", MaxPthModules)
		}
		if w.capped != "" {
			capped = append(capped, Capped{Pattern: rel + " (its imports)", Files: MaxPerPattern - w.left, Reason: w.capped})
		}
	}
	return capped
}
