// Package linkwalk decides where a symlink leads as the kernel's path walk decides it, not by
// joining the link's directory and its target as text.
//
// Joined as text, ".." cancels the name before it; the kernel applies ".." to the directory that
// name resolved to. A branch holding a/b/c/d/e/f/g/h/y -> ../../../../../../../.. (the top) and
// notes.txt -> a/b/c/d/e/f/g/h/y/ followed by nine ".." and home/<user>/.bashrc joins to
// home/<user>/.bashrc under the top, and, in a checkout at /home/<user>/proj, leads to the
// user's ~/.bashrc (issue 34). abox reviews what an isolated run's branch would check out
// (internal/isolate) and fingerprints what a watched link leads to (internal/watch) with the
// same walk.
//
// The walk reads a tree name by name through a lookup the caller gives: a directory is entered,
// a symlink is followed (its target read relative to the directory holding it), ".." goes to the
// parent of the directory reached so far, and going above the top or an absolute target leaves
// the tree. A name below what the lookup says is absent, or below a file, is taken as a
// directory still to come: a link that will lead out once that directory exists leads out now.
// Once out of the tree the walk stops: a path that comes back in through the host (../proj/x) is
// out all the same, and the path shown is joined as text from the top. A target ends at its
// first NUL, as symlink(2) reads it: a committed blob may hold one, and git's checkout writes
// the link up to there. More than [MaxLinks] symlinks, a loop of them, a target the caller
// could not read, or a name inside a submodule (whose content comes from another repository)
// make the link unresolvable. Each symlink is resolved once and the work of one [Walker] is
// bounded, so a tree of deep link chains cannot hold its caller for long.
package linkwalk

import (
	"fmt"
	"path"
	"strings"
)

// MaxLinks bounds the symlinks one resolution follows: Linux's MAXSYMLINKS.
const MaxLinks = 40

// maxWork bounds the names a [Walker] walks and the bytes it looks up; past it every link left
// is unresolvable.
const maxWork = 1 << 28

// Kind is what a path names.
type Kind int

// Kinds of [Node].
const (
	Absent Kind = iota
	Dir
	File
	Link
	Submodule
)

// Node is what a path names: its kind and, for a symlink, its target; Read is false when the
// target could not be read (too long, say).
type Node struct {
	Kind   Kind
	Target string
	Read   bool
}

// Kinds of [Dest].
const (
	Inside       = "inside"       // Path is relative to the top; "." is the top
	Outside      = "outside"      // Path is absolute, on the host
	Git          = "git"          // Path is relative to the top and passes through a .git
	Unresolvable = "unresolvable" // Why says why
)

// Dest is where a symlink leads.
type Dest struct {
	Kind string `json:"kind"`
	Path string `json:"path,omitempty"`
	Why  string `json:"why,omitempty"`
}

// Out reports whether d is anywhere but inside the tree.
func (d Dest) Out() bool { return d.Kind != Inside }

// String says where d is for a person: "leads to a/b", "outside the repository: /etc",
// "into .git: .git/hooks", "unresolvable: …". The path may be an agent's text: print it escaped.
func (d Dest) String() string {
	switch d.Kind {
	case Inside:
		if d.Path == "." {
			return "leads to the repository's top"
		}
		return "leads to " + d.Path
	case Outside:
		return "outside the repository: " + d.Path
	case Git:
		return "into .git: " + d.Path
	}
	return "unresolvable: " + d.Why
}

func unresolvable(format string, args ...any) Dest {
	return Dest{Kind: Unresolvable, Why: fmt.Sprintf(format, args...)}
}

// Options say what a [Walker] walks.
type Options struct {
	// Lookup says what p names, a path relative to the top with neither "." nor ".." names,
	// whose directories are resolved already: it must not follow p itself.
	Lookup func(p string) Node
	// Top is the top's path on the host, from which a path above it is shown.
	Top string
	// StopAtGit ends the walk at a ".git" name, in any case: the link leads into .git.
	StopAtGit bool
}

// Walker resolves the symlinks of one tree, each once.
type Walker struct {
	o    Options
	memo map[string]resolved // symlink path → where it leads
	busy map[string]bool     // symlinks being resolved: met again, a loop
	work int                 // names walked and bytes looked up, against maxWork
}

// resolved is where a symlink leads and how many symlinks that took, itself included.
type resolved struct {
	dest Dest
	hops int
}

// New returns a Walker of the tree o describes.
func New(o Options) *Walker {
	return &Walker{o: o, memo: map[string]resolved{}, busy: map[string]bool{}}
}

// Target says where a symlink at p with target leads.
func (w *Walker) Target(p, target string) Dest {
	res := w.follow(path.Dir(p), target)
	if res.hops+1 > MaxLinks && res.dest.Kind != Unresolvable {
		return unresolvable("more than %d symlinks to follow", MaxLinks)
	}
	return res.dest
}

// Link says where the symlink at p, which Lookup described as n, leads.
func (w *Walker) Link(p string, n Node) Dest { return w.link(p, n).dest }

// link resolves the symlink at p once: a symlink's target is read from the directory holding
// it, whatever path reached it, so where it leads does not depend on the walk that met it.
func (w *Walker) link(p string, n Node) resolved {
	if res, ok := w.memo[p]; ok {
		return res
	}
	if w.busy[p] {
		return resolved{dest: unresolvable("a loop of symlinks through %s", p), hops: 1}
	}
	w.busy[p] = true
	var res resolved
	if !n.Read {
		res = resolved{dest: unresolvable("the target of %s was not read", p), hops: 1}
	} else {
		res = w.follow(path.Dir(p), n.Target)
		res.hops++
	}
	if res.hops > MaxLinks && res.dest.Kind != Unresolvable {
		res.dest = unresolvable("more than %d symlinks to follow", MaxLinks)
	}
	delete(w.busy, p)
	w.memo[p] = res
	return res
}

// follow walks target from the directory dir ("." for the top) as the kernel does, following
// every symlink on the way and the last one too. A target is what symlink(2) reads of it: up
// to its first NUL, which a committed blob may hold and git's checkout passes on.
func (w *Walker) follow(dir, target string) resolved {
	if i := strings.IndexByte(target, 0); i >= 0 {
		target = target[:i]
	}
	if target == "" {
		return resolved{dest: unresolvable("an empty target")}
	}
	if strings.HasPrefix(target, "/") {
		return resolved{dest: Dest{Kind: Outside, Path: path.Clean(target)}}
	}
	var at walk
	at.enter(dir, Dir)
	hops := 0
	parts := strings.Split(target, "/")
	for i, name := range parts {
		rest := parts[i+1:]
		if w.work++; w.work > maxWork {
			return resolved{dest: unresolvable("more to resolve than abox reads"), hops: hops}
		}
		switch {
		case name == "" || name == ".":
			continue
		case name == "..":
			if len(at.names) == 0 {
				return resolved{dest: Dest{Kind: Outside, Path: joinClean(w.o.Top+"/..", rest)}, hops: hops}
			}
			at.pop()
			continue
		case w.o.StopAtGit && strings.EqualFold(name, ".git"):
			return resolved{dest: Dest{Kind: Git, Path: joinRaw(at.path(name), rest)}, hops: hops}
		case at.inSubmodule():
			return resolved{dest: unresolvable("%s is inside the submodule %s", joinRaw(at.path(name), rest), at.path("")), hops: hops}
		case at.virtual > 0:
			at.push(name, Absent) // below a name nothing holds
			continue
		}
		p := at.path(name)
		w.work += len(p)
		n := w.o.Lookup(p)
		if n.Kind != Link {
			at.push(name, n.Kind)
			continue
		}
		res := w.link(p, n)
		if hops += res.hops; hops > MaxLinks && res.dest.Kind != Unresolvable {
			return resolved{dest: unresolvable("more than %d symlinks to follow", MaxLinks), hops: hops}
		}
		switch res.dest.Kind {
		case Inside:
			at = walk{}
			if res.dest.Path != "." {
				at.enter(res.dest.Path, w.o.Lookup(res.dest.Path).Kind)
			}
		case Outside:
			return resolved{dest: Dest{Kind: Outside, Path: joinClean(res.dest.Path, rest)}, hops: hops}
		case Git:
			return resolved{dest: Dest{Kind: Git, Path: joinRaw(res.dest.Path, rest)}, hops: hops}
		default:
			return resolved{dest: res.dest, hops: hops}
		}
	}
	return resolved{dest: Dest{Kind: Inside, Path: at.path("")}, hops: hops}
}

// walk is the directory a walk has reached: its names from the top, what each is, and how many
// of the last ones are below a name nothing holds (nothing can be looked up there).
type walk struct {
	names   []string
	kinds   []Kind
	virtual int
}

// enter starts the walk at p, a path resolved already, whose last name is a last.
func (at *walk) enter(p string, last Kind) {
	if p == "." || p == "" {
		return
	}
	names := strings.Split(p, "/")
	for i, name := range names {
		kind := Dir
		if i == len(names)-1 {
			kind = last
		}
		at.push(name, kind)
	}
}

func (at *walk) push(name string, kind Kind) {
	at.names = append(at.names, name)
	at.kinds = append(at.kinds, kind)
	if at.virtual > 0 || kind == Absent || kind == File {
		at.virtual++
	}
}

func (at *walk) pop() {
	at.names = at.names[:len(at.names)-1]
	at.kinds = at.kinds[:len(at.kinds)-1]
	if at.virtual > 0 {
		at.virtual--
	}
}

func (at *walk) inSubmodule() bool {
	return len(at.kinds) > 0 && at.kinds[len(at.kinds)-1] == Submodule
}

// path is the walk's directory joined with name ("" for the directory itself, "." at the top).
func (at *walk) path(name string) string {
	p := strings.Join(at.names, "/")
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
// tree the walk knows nothing of the links on the way, and the path is only shown.
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
