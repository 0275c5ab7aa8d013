package linkwalk

import (
	"fmt"
	"path"
	"strings"
	"testing"
)

// fakeTree is a tree for the resolver: "->target" a symlink, "/" a directory, "sub" a
// submodule, "unread" a symlink whose target was too long to read, anything else a file. The
// directories holding a path are added.
func fakeTree(entries map[string]string) func(string) Node {
	nodes := map[string]Node{}
	for p, v := range entries {
		switch {
		case strings.HasPrefix(v, "->"):
			nodes[p] = Node{Kind: Link, Target: v[2:], Read: true}
		case v == "/":
			nodes[p] = Node{Kind: Dir}
		case v == "sub":
			nodes[p] = Node{Kind: Submodule}
		case v == "unread":
			nodes[p] = Node{Kind: Link}
		default:
			nodes[p] = Node{Kind: File}
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			nodes[d] = Node{Kind: Dir}
		}
	}
	return func(p string) Node { return nodes[p] }
}

// chain is n symlinks l1 -> l2 -> … -> ln -> file.
func chain(n int) map[string]string {
	t := map[string]string{"file": "x"}
	for i := 1; i <= n; i++ {
		next := fmt.Sprintf("l%d", i+1)
		if i == n {
			next = "file"
		}
		t[fmt.Sprintf("l%d", i)] = "->" + next
	}
	return t
}

// TestLinksAreResolvedNotJoined: where a committed symlink leads is decided by walking the tree
// as the kernel would, link by link, not by joining its directory and target as text. The
// attack of issue 34: y is a link to the repository's top eight directories down, and notes.txt
// names y, then nine "..": joined as text that cancels to home/user/.bashrc inside the
// repository; walked, it climbs nine levels above the top — from /home/user/proj, to /, then
// /home/user/.bashrc.
func TestLinksAreResolvedNotJoined(t *testing.T) {
	const ws = "/home/user/proj"
	deep := "a/b/c/d/e/f/g/h"
	for _, tc := range []struct {
		name string
		tree map[string]string
		link string
		want Dest
	}{
		{"the attack pair", map[string]string{
			deep + "/y": "->" + strings.Repeat("../", 7) + "..",
			"notes.txt": "->" + deep + "/y/" + strings.Repeat("../", 9) + "home/user/.bashrc",
		}, "notes.txt", Dest{Kind: Outside, Path: "/home/user/.bashrc"}},
		{"the attack's inner link leads to the top", map[string]string{
			deep + "/y": "->" + strings.Repeat("../", 7) + "..",
		}, deep + "/y", Dest{Kind: Inside, Path: "."}},
		{"into .git through a link", map[string]string{
			deep + "/y": "->" + strings.Repeat("../", 7) + "..",
			"hooks":     "->" + deep + "/y/.git/hooks",
		}, "hooks", Dest{Kind: Git, Path: ".git/hooks"}},
		{"into .git by another case", map[string]string{"cfg": "->d/../.GIT/config", "d/x": "x"},
			"cfg", Dest{Kind: Git, Path: ".GIT/config"}},
		{"into a nested .git", map[string]string{"h": "->vendor/.git/hooks", "vendor/x": "x"},
			"h", Dest{Kind: Git, Path: "vendor/.git/hooks"}},
		{".. past the top through a directory link", map[string]string{"a/d": "->..", "x": "->a/d/../secret"},
			"x", Dest{Kind: Outside, Path: "/home/user/secret"}},
		{".. applies to where a directory link leads", map[string]string{"d": "->a/b", "a/b/f": "x", "a/c.txt": "x", "x": "->d/../c.txt"},
			"x", Dest{Kind: Inside, Path: "a/c.txt"}},
		{"a chain inside", map[string]string{"l": "->m", "m": "->sub/n", "sub/n": "->../t.txt", "t.txt": "x"},
			"l", Dest{Kind: Inside, Path: "t.txt"}},
		{"a link in a linked directory resolves from where it is", map[string]string{"d": "->a/b", "a/b/up": "->..", "x": "->d/up/../../x"},
			"x", Dest{Kind: Outside, Path: "/home/user/x"}},
		{"dangling, inside", map[string]string{"l": "->build/out/app"},
			"l", Dest{Kind: Inside, Path: "build/out/app"}},
		{"below a name nothing holds, .. still climbs", map[string]string{"l": "->nothere/../../x"},
			"l", Dest{Kind: Outside, Path: "/home/user/x"}},
		{"below a file, as if it became a directory", map[string]string{"README": "x", "l": "->README/../../x"},
			"l", Dest{Kind: Outside, Path: "/home/user/x"}},
		{"absolute", map[string]string{"l": "->/etc/passwd"},
			"l", Dest{Kind: Outside, Path: "/etc/passwd"}},
		{"absolute through a link", map[string]string{"d": "->/etc", "l": "->d/passwd"},
			"l", Dest{Kind: Outside, Path: "/etc/passwd"}},
		{"plainly up", map[string]string{"l": "->../../../etc"},
			"l", Dest{Kind: Outside, Path: "/etc"}},
		{"the top itself", map[string]string{"a/l": "->.."},
			"a/l", Dest{Kind: Inside, Path: "."}},
		{"a loop", map[string]string{"a": "->b", "b": "->a"},
			"a", unresolvable("a loop of symlinks through a")},
		{"a loop through a directory", map[string]string{"d": "->d/x"},
			"d", unresolvable("a loop of symlinks through d")},
		{"a chain of 40", chain(40), "l1", Dest{Kind: Inside, Path: "file"}},
		{"a chain of 41", chain(41), "l1", unresolvable("more than 40 symlinks to follow")},
		{"inside a submodule", map[string]string{"lib": "sub", "l": "->lib/include"},
			"l", unresolvable("lib/include is inside the submodule lib")},
		{"out of a submodule", map[string]string{"lib": "sub", "l": "->lib/../x"},
			"l", Dest{Kind: Inside, Path: "x"}},
		{"through a target too long to read", map[string]string{"d": "unread", "l": "->d/x"},
			"l", unresolvable("the target of d was not read")},
		{"empty", map[string]string{"l": "->"}, "l", unresolvable("an empty target")},
		{"a NUL ends the target", map[string]string{"g": "->.git\x00/../README"},
			"g", Dest{Kind: Git, Path: ".git"}},
		{"a NUL after a user link", map[string]string{"cache": "->/var/cache", "x": "->cache\x00junk"},
			"x", Dest{Kind: Outside, Path: "/var/cache"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Lookup: fakeTree(tc.tree), Top: ws, StopAtGit: true}
			n := o.Lookup(tc.link)
			got := New(o).Link(tc.link, n)
			if got != tc.want {
				t.Errorf("%s -> %q leads %+v, want %+v", tc.link, n.Target, got, tc.want)
			}
			// Resolved as a target of its own (a link the branch adds): the same place, or as
			// unresolvable (a loop is met at another link first).
			direct := New(o).Target(tc.link, n.Target)
			if direct.Kind == Unresolvable {
				direct.Why = tc.want.Why
			}
			if n.Read && direct != tc.want {
				t.Errorf("%s's target resolved alone leads %+v, want %+v", tc.link, direct, tc.want)
			}
		})
	}
}

// TestGitIsANameUnlessStopped: without StopAtGit a ".git" name is walked like any other, as the
// watch walks the live workspace, where .git is the agent's to write anyway.
func TestGitIsANameUnlessStopped(t *testing.T) {
	o := Options{Lookup: fakeTree(map[string]string{".git/config": "x", "d/x": "x", "cfg": "->d/../.git/config"}), Top: "/w"}
	if got := New(o).Link("cfg", o.Lookup("cfg")); got != (Dest{Kind: Inside, Path: ".git/config"}) {
		t.Errorf("cfg leads %+v, want .git/config inside", got)
	}
}
