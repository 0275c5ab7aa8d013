package isolate

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/linkwalk"
)

// attackPair makes, under dir, the symlinks of issue 34's attack aimed at target (an absolute
// path): y, deep enough below the top that as many ".." as its depth reach / from the
// repository ws, is a link to the top; notes.txt names y and then that many "..": joined as
// text they cancel, and the rest reads as a path inside the repository. Walked, they climb from
// the top to /, then to target. hooks leads into .git through y.
func attackPair(t *testing.T, dir, ws, target string) {
	t.Helper()
	depth := max(9, strings.Count(filepath.Clean(ws), "/")+1)
	deep := strings.Repeat("a/", depth-1)
	links := map[string]string{
		deep + "y":  strings.TrimSuffix(strings.Repeat("../", depth-1), "/"),
		"notes.txt": deep + "y/" + strings.Repeat("../", depth) + strings.TrimPrefix(target, "/"),
		"hooks":     deep + "y/.git/hooks",
	}
	for p, to := range links {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
}

// leads returns where Diff says each symlink of run id leads, by path.
func (f *fixture) leads(id string) map[string]File {
	f.t.Helper()
	d, err := f.repo.Diff(context.Background(), id, false)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]File{}
	for _, file := range d.Files {
		if file.Leads != nil {
			out[file.Path] = file
		}
	}
	return out
}

// TestMergeRefusesLinksOutThroughLinks: issue 34's attack. The branch's notes.txt joins, as
// text, to a path inside the repository, and leads through y (a link to the top) to a file
// outside it; hooks leads into .git the same way. Diff says where each really leads, Merge
// refuses both without force, and, forced, writing notes.txt on the host writes the outside
// file: the verdict is the kernel's.
func TestMergeRefusesLinksOutThroughLinks(t *testing.T) {
	f := newFixture(t)
	victim := filepath.Join(t.TempDir(), "bashrc")
	writeFile(t, victim, "# the user's own\n")
	f.create("pair", CreateOptions{})
	attackPair(t, f.repo.Project.Clone("pair"), f.ws, victim)
	f.collect("pair")

	got := f.leads("pair")
	if d := got["notes.txt"]; !d.Out || *d.Leads != (linkwalk.Dest{Kind: linkwalk.Outside, Path: victim}) {
		t.Errorf("notes.txt: %+v, want outside the repository at %s", d.Leads, victim)
	}
	if d := got["hooks"]; !d.Out || *d.Leads != (linkwalk.Dest{Kind: linkwalk.Git, Path: ".git/hooks"}) {
		t.Errorf("hooks: %+v, want into .git", d.Leads)
	}
	head := f.git(f.ws, "rev-parse", "HEAD")
	_, err := f.repo.Merge(context.Background(), "pair", MergeOptions{})
	if !errors.Is(err, ErrFlagged) || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "hooks (") {
		t.Fatalf("Merge = %v, want a refusal naming notes.txt and hooks", err)
	}
	f.hostUntouched(head)

	if _, err := f.repo.Merge(context.Background(), "pair", MergeOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	note, err := os.OpenFile(filepath.Join(f.ws, "notes.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("notes.txt does not lead to a file: %v", err)
	}
	note.WriteString("appended to notes.txt\n")
	note.Close()
	if data, _ := os.ReadFile(victim); string(data) != "# the user's own\nappended to notes.txt\n" {
		t.Errorf("the outside file reads %q: the test's links do not lead where the kernel goes", data)
	}
	if a, err := os.Stat(filepath.Join(f.ws, "hooks")); err != nil || !os.SameFile(a, statOf(t, filepath.Join(f.ws, ".git/hooks"))) {
		t.Errorf("hooks does not lead to .git/hooks: %v", err)
	}
}

func statOf(t *testing.T, p string) os.FileInfo {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLinksThroughTheUsersWorkTree: what no tree names is the user's work tree, which the merge
// leaves alone: an ignored symlink of the user's, cache, leads outside, and a link of the
// branch through it leads there too; one through the user's link to .git leads into .git.
func TestLinksThroughTheUsersWorkTree(t *testing.T) {
	f := newFixture(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(f.ws, ".gitignore"), "cache\ngitdir\n")
	f.git(f.ws, "add", ".gitignore")
	f.git(f.ws, "commit", "--quiet", "-m", "ignore")
	for name, to := range map[string]string{"cache": outside, "gitdir": ".git"} {
		if err := os.Symlink(to, filepath.Join(f.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	f.create("wt", CreateOptions{})
	clone := f.repo.Project.Clone("wt")
	for name, to := range map[string]string{"data": "cache/secret", "h": "gitdir/hooks", "inside": "README"} {
		if err := os.Symlink(to, filepath.Join(clone, name)); err != nil {
			t.Fatal(err)
		}
	}
	f.collect("wt")
	got := f.leads("wt")
	for p, want := range map[string]linkwalk.Dest{
		"data":   {Kind: linkwalk.Outside, Path: filepath.Join(outside, "secret")},
		"h":      {Kind: linkwalk.Git, Path: ".git/hooks"},
		"inside": {Kind: linkwalk.Inside, Path: "README"},
	} {
		if got[p].Leads == nil || *got[p].Leads != want || got[p].Out != want.Out() {
			t.Errorf("%s leads %+v (out %v), want %+v", p, got[p].Leads, got[p].Out, want)
		}
	}
	if _, err := f.repo.Merge(context.Background(), "wt", MergeOptions{}); !errors.Is(err, ErrFlagged) || strings.Contains(err.Error(), "inside") {
		t.Errorf("Merge = %v, want data and h refused, inside not", err)
	}
}

// TestBranchMakesTheUsersLinkLeadOut: the user's own l -> a/b/../../README leads to README. The
// branch leaves l as it is but makes a/b a link to the top (itself inside the repository), so
// that after the merge l leads out of it. Diff lists l (status L), and Merge refuses it.
func TestBranchMakesTheUsersLinkLeadOut(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.ws, "a/b/file"), "x\n")
	if err := os.Symlink("a/b/../../README", filepath.Join(f.ws, "l")); err != nil {
		t.Fatal(err)
	}
	f.git(f.ws, "add", ".")
	f.git(f.ws, "commit", "--quiet", "-m", "the user's link")
	f.create("re", CreateOptions{})
	clone := f.repo.Project.Clone("re")
	if err := os.RemoveAll(filepath.Join(clone, "a/b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(clone, "a/b")); err != nil {
		t.Fatal(err)
	}
	f.collect("re")
	got := f.leads("re")
	if d := got["a/b"]; d.Out || d.Leads.Path != "." {
		t.Errorf("a/b leads %+v, want the repository's top", d.Leads)
	}
	want := linkwalk.Dest{Kind: linkwalk.Outside, Path: filepath.Join(f.ws, "../../README")}
	if d := got["l"]; d.Status != "L" || !d.Out || *d.Leads != want {
		t.Errorf("l: %+v, want listed as L, leading %v", d, want)
	}
	if _, err := f.repo.Merge(context.Background(), "re", MergeOptions{}); !errors.Is(err, ErrFlagged) || !strings.Contains(err.Error(), "l (") {
		t.Errorf("Merge = %v, want l refused", err)
	}
}

// TestLinksResolvedInTheMergedTree: links are resolved in the tree the merge checks out. When
// the run began a/b was a directory; the user's branch has since made it a link to the top. The
// run's l -> a/b/../x leads to a/x in the run's own tree, which still holds the directory, and
// out of the repository once merged, where a/b is the user's link.
func TestLinksResolvedInTheMergedTree(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.ws, "a/b/file"), "x\n")
	f.git(f.ws, "add", ".")
	f.git(f.ws, "commit", "--quiet", "-m", "a/b")
	f.create("mv", CreateOptions{})
	if err := os.Symlink("a/b/../x", filepath.Join(f.repo.Project.Clone("mv"), "l")); err != nil {
		t.Fatal(err)
	}
	f.collect("mv")
	if d := f.leads("mv")["l"]; d.Out || d.Leads.Path != "a/x" {
		t.Fatalf("before the user's commit l leads %v, want a/x", d.Leads)
	}
	f.git(f.ws, "rm", "--quiet", "-r", "a/b")
	if err := os.MkdirAll(filepath.Join(f.ws, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(f.ws, "a/b")); err != nil {
		t.Fatal(err)
	}
	f.git(f.ws, "add", "a/b")
	f.git(f.ws, "commit", "--quiet", "-m", "the user's own link to the top")
	want := linkwalk.Dest{Kind: linkwalk.Outside, Path: filepath.Join(filepath.Dir(f.ws), "x")}
	if d := f.leads("mv")["l"]; !d.Out || *d.Leads != want {
		t.Errorf("after the user's commit l leads %v, want %v", d.Leads, want)
	}
	if _, err := f.repo.Merge(context.Background(), "mv", MergeOptions{}); !errors.Is(err, ErrFlagged) {
		t.Errorf("Merge = %v, want l refused", err)
	}
}

// TestLinkTargetEndsAtNUL: a symlink's blob may hold a NUL, which git's checkout passes to
// symlink(2), so the link written ends there. The agent commits x -> ".git\0/../README", which
// read whole names nothing, and is checked out as a link to .git: Diff says so, and Merge
// refuses it.
func TestLinkTargetEndsAtNUL(t *testing.T) {
	f := newFixture(t)
	f.create("nul", CreateOptions{})
	clone := f.repo.Project.Clone("nul")
	hash := exec.Command("git", "-C", clone, "hash-object", "-w", "--stdin")
	hash.Stdin = strings.NewReader(".git\x00/../README")
	blob, err := hash.Output()
	if err != nil {
		t.Fatal(err)
	}
	f.git(clone, "update-index", "--add", "--cacheinfo", "120000,"+strings.TrimSpace(string(blob))+",x")
	f.git(clone, "-c", "user.name=agent", "-c", "user.email=a@b", "commit", "--quiet", "-m", "a link with a NUL")
	// Checked out, x is a link to .git. git smudges its index entry (size 0), as the content
	// differs from the blob; the agent writes the link's real size back into its index and
	// dates the index after the link, so the collect's git add takes x as unchanged.
	f.git(clone, "reset", "--quiet", "--hard")
	unsmudge(t, filepath.Join(clone, ".git/index"), "x", 4)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(clone, ".git/index"), later, later); err != nil {
		t.Fatal(err)
	}
	f.collect("nul")
	if got := f.git(f.ws, "cat-file", "-p", "abox/nul:x"); got != ".git\x00/../README" {
		t.Fatalf("the branch's x = %q, want the agent's blob", got)
	}
	if d := f.leads("nul")["x"]; d.Leads == nil || *d.Leads != (linkwalk.Dest{Kind: linkwalk.Git, Path: ".git"}) || !d.Out {
		t.Errorf("x leads %+v, want into .git", d.Leads)
	}
	if _, err := f.repo.Merge(context.Background(), "nul", MergeOptions{}); !errors.Is(err, ErrFlagged) {
		t.Errorf("Merge = %v, want x refused", err)
	}
	if _, err := f.repo.Merge(context.Background(), "nul", MergeOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(f.ws, "x")); err != nil || target != ".git" {
		t.Errorf("checked out, x -> %q (%v), want .git: git writes the target up to its NUL", target, err)
	}
}

// unsmudge sets the size in the version-2 index at p of the entry name, and the index's
// checksum, as an agent may write its index by hand.
func unsmudge(t *testing.T, p, name string, size uint32) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil || len(data) < 32 || string(data[:4]) != "DIRC" || binary.BigEndian.Uint32(data[4:]) != 2 {
		t.Fatalf("reading the index: %v", err)
	}
	off := 12
	for i := uint32(0); i < binary.BigEndian.Uint32(data[8:]); i++ {
		n := int(binary.BigEndian.Uint16(data[off+60:]) & 0xfff)
		if string(data[off+62:off+62+n]) == name {
			binary.BigEndian.PutUint32(data[off+36:], size)
			sum := sha1.Sum(data[:len(data)-sha1.Size])
			copy(data[len(data)-sha1.Size:], sum[:])
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		off += (62 + n + 8) &^ 7
	}
	t.Fatalf("the index has no entry %s", name)
}
