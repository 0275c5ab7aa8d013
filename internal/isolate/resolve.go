package isolate

import (
	"fmt"
	"path"
	"strings"
)

// Where a symlink leads is decided as the kernel's path walk would decide it in the user's
// checkout after the merge, not by joining the link's directory and its target as text: there
// ".." cancels the name before it, while the kernel applies ".." to the directory that name
// resolved to. A branch holding a/b/c/d/e/f/g/h/y -> ../../../../../../../.. (the repository's
// top) and notes.txt -> a/b/c/d/e/f/g/h/y/ followed by nine ".." and home/<user>/.bashrc joins to
// home/<user>/.bashrc inside the repository, and, merged into a checkout at /home/<user>/proj,
// leads to the user's ~/.bashrc.
//
// The walk reads the committed tree component by component: a directory is entered, a symlink
// of the tree is followed (its target read from the tree, relative to the directory holding it),
// ".." goes to the parent of the directory reached so far, and going above the repository's top
// or an absolute target leaves the repository. A path the tree does not name is looked up in
// the user's work tree, which keeps what the merge does not touch (an ignored build directory,
// a symlink the user made); a name below what neither holds, or below a file, is taken as a
// directory still to come, so that a link that will lead out once that directory exists is
// refused now. Once out of the repository the walk stops: a path that comes back in through the
// host (../proj/x) is out all the same, and the path shown is joined as text from the
// repository's top. A name ".git" (in any case) is .git, wherever it is. More than
// [maxLinkDepth] symlinks, a loop of them, a target too long to read, or a name inside a
// submodule (whose content comes from another repository) leave the link unresolvable, which
// merge refuses as it refuses one out.

// maxLinkDepth bounds the symlinks one resolution follows: Linux's MAXSYMLINKS.
const maxLinkDepth = 40

// maxResolveWork bounds the names all the resolutions of one tree walk and the bytes they look
// up: a branch of deep link chains cannot hold abox's review for long. Past it every link left
// is unresolvable.
const maxResolveWork = 1 << 28

// Kinds of [Dest].
const (
	LeadsInside       = "inside"       // Path is relative to the repository's top; "." is the top
	LeadsOutside      = "outside"      // Path is absolute, on the host
	LeadsGit          = "git"          // Path is relative to the repository's top and passes through .git
	LeadsUnresolvable = "unresolvable" // Why says why
)

// Dest is where a symlink leads once merged.
type Dest struct {
	Kind string `json:"kind"`
	Path string `json:"path,omitempty"`
	Why  string `json:"why,omitempty"`
}

// Out reports whether merge refuses d without force: anywhere but inside the repository.
func (d Dest) Out() bool { return d.Kind != LeadsInside }

// String says where d is for a person: "leads to a/b", "outside the repository: /etc",
// "into .git: .git/hooks", "unresolvable: …". The path is the agent's text: print it escaped.
func (d Dest) String() string {
	switch d.Kind {
	case LeadsInside:
		if d.Path == "." {
			return "leads to the repository's top"
		}
		return "leads to " + d.Path
	case LeadsOutside:
		return "outside the repository: " + d.Path
	case LeadsGit:
		return "into .git: " + d.Path
	}
	return "unresolvable: " + d.Why
}

func unresolvable(format string, args ...any) Dest {
	return Dest{Kind: LeadsUnresolvable, Why: fmt.Sprintf(format, args...)}
}

// Kinds of what a path names, for the walk.
const (
	kindAbsent = iota
	kindDir
	kindFile
	kindLink
	kindSubmodule
)

// node is what a path names: its kind and, for a symlink, its target (ok false when the target
// was too long to read).
type node struct {
	kind   int
	target string
	ok     bool
}

// resolver resolves the symlinks of one tree. lookup says what a path (relative to the top,
// without "." or ".." names) is; outsideBase is the repository's top on the host, which paths
// that climb above the top are shown from.
type resolver struct {
	lookup      func(p string) node
	outsideBase string
	memo        map[string]resolved // symlink path → where it leads
	busy        map[string]bool     // symlinks being resolved: met again, a loop
	work        int                 // names walked and bytes looked up, against maxResolveWork
}

// resolved is where a symlink leads and how many symlinks that took, itself included.
type resolved struct {
	dest Dest
	hops int
}

func newResolver(lookup func(string) node, outsideBase string) *resolver {
	return &resolver{lookup: lookup, outsideBase: outsideBase, memo: map[string]resolved{}, busy: map[string]bool{}}
}

// target resolves target as the target of a symlink at p.
func (r *resolver) target(p, target string) Dest {
	res := r.follow(path.Dir(p), target)
	if res.hops+1 > maxLinkDepth && res.dest.Kind != LeadsUnresolvable {
		return unresolvable("more than %d symlinks to follow", maxLinkDepth)
	}
	return res.dest
}

// link resolves the symlink at p once: a symlink's target is read from the directory holding
// it, whatever path reached it, so where it leads does not depend on the walk that met it.
func (r *resolver) link(p string, n node) resolved {
	if res, ok := r.memo[p]; ok {
		return res
	}
	if r.busy[p] {
		return resolved{dest: unresolvable("a loop of symlinks through %s", p), hops: 1}
	}
	r.busy[p] = true
	var res resolved
	if !n.ok {
		res = resolved{dest: unresolvable("%s has a target longer than %d bytes, not read", p, maxLinkTarget), hops: 1}
	} else {
		res = r.follow(path.Dir(p), n.target)
		res.hops++
	}
	if res.hops > maxLinkDepth && res.dest.Kind != LeadsUnresolvable {
		res.dest = unresolvable("more than %d symlinks to follow", maxLinkDepth)
	}
	delete(r.busy, p)
	r.memo[p] = res
	return res
}

// follow walks target from the directory dir ("." for the top) as the kernel does, following
// every symlink on the way and the last one too.
func (r *resolver) follow(dir, target string) resolved {
	if target == "" {
		return resolved{dest: unresolvable("an empty target")}
	}
	if strings.HasPrefix(target, "/") {
		return resolved{dest: Dest{Kind: LeadsOutside, Path: path.Clean(target)}}
	}
	var w walk
	w.enter(dir, kindDir)
	hops := 0
	parts := strings.Split(target, "/")
	for i, name := range parts {
		rest := parts[i+1:]
		if r.work++; r.work > maxResolveWork {
			return resolved{dest: unresolvable("more to resolve in this branch than abox reads"), hops: hops}
		}
		switch {
		case name == "" || name == ".":
			continue
		case name == "..":
			if len(w.names) == 0 {
				return resolved{dest: Dest{Kind: LeadsOutside, Path: joinClean(r.outsideBase+"/..", rest)}, hops: hops}
			}
			w.pop()
			continue
		case strings.EqualFold(name, ".git"):
			return resolved{dest: Dest{Kind: LeadsGit, Path: joinRaw(w.path(name), rest)}, hops: hops}
		case w.inSubmodule():
			return resolved{dest: unresolvable("%s is inside the submodule %s", joinRaw(w.path(name), rest), w.path("")), hops: hops}
		case w.virtual > 0:
			w.push(name, kindAbsent) // below a name neither the tree nor the work tree holds
			continue
		}
		p := w.path(name)
		r.work += len(p)
		n := r.lookup(p)
		if n.kind != kindLink {
			w.push(name, n.kind)
			continue
		}
		res := r.link(p, n)
		if hops += res.hops; hops > maxLinkDepth && res.dest.Kind != LeadsUnresolvable {
			return resolved{dest: unresolvable("more than %d symlinks to follow", maxLinkDepth), hops: hops}
		}
		switch res.dest.Kind {
		case LeadsInside:
			w = walk{}
			if res.dest.Path != "." {
				w.enter(res.dest.Path, r.lookup(res.dest.Path).kind)
			}
		case LeadsOutside:
			return resolved{dest: Dest{Kind: LeadsOutside, Path: joinClean(res.dest.Path, rest)}, hops: hops}
		case LeadsGit:
			return resolved{dest: Dest{Kind: LeadsGit, Path: joinRaw(res.dest.Path, rest)}, hops: hops}
		default:
			return resolved{dest: res.dest, hops: hops}
		}
	}
	return resolved{dest: Dest{Kind: LeadsInside, Path: w.path("")}, hops: hops}
}

// walk is the directory a walk has reached: its names from the top, what each is, and how many
// of the last ones are below a name nothing holds (nothing can be looked up there).
type walk struct {
	names   []string
	kinds   []int
	virtual int
}

// enter starts the walk at p, a path resolved already, whose last name is a last.
func (w *walk) enter(p string, last int) {
	if p == "." || p == "" {
		return
	}
	names := strings.Split(p, "/")
	for i, name := range names {
		kind := kindDir
		if i == len(names)-1 {
			kind = last
		}
		w.push(name, kind)
	}
}

func (w *walk) push(name string, kind int) {
	w.names = append(w.names, name)
	w.kinds = append(w.kinds, kind)
	if w.virtual > 0 || kind == kindAbsent || kind == kindFile {
		w.virtual++
	}
}

func (w *walk) pop() {
	w.names = w.names[:len(w.names)-1]
	w.kinds = w.kinds[:len(w.kinds)-1]
	if w.virtual > 0 {
		w.virtual--
	}
}

func (w *walk) inSubmodule() bool {
	return len(w.kinds) > 0 && w.kinds[len(w.kinds)-1] == kindSubmodule
}

// path is the walk's directory joined with name ("" for the directory itself, "." at the top).
func (w *walk) path(name string) string {
	p := strings.Join(w.names, "/")
	switch {
	case name == "" && p == "":
		return "."
	case name == "":
		return p
	case p == "":
		return name
	}
	return p + "/" + name
}

// joinClean joins the names rest to base, a host path, applying ".." as text: once out of the
// repository the walk knows nothing of the links on the way, and the path is only shown.
func joinClean(base string, rest []string) string {
	return path.Join(append([]string{base}, rest...)...)
}

// joinRaw joins the names rest to p as they are, for showing where a walk stopped.
func joinRaw(p string, rest []string) string {
	if len(rest) == 0 {
		return p
	}
	return p + "/" + strings.Join(rest, "/")
}
