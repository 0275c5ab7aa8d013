package isolate

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// writeIndex writes a version-2 index at p naming paths, each with blob and zero stat data
// (so git hashes the file again), as an agent can write it by hand: git checks paths when it
// writes an index, not when it reads one.
func writeIndex(t *testing.T, p, blob string, paths []string) {
	t.Helper()
	id, err := hex.DecodeString(blob)
	if err != nil || len(id) != sha1.Size {
		t.Fatalf("blob %q: %v", blob, err)
	}
	sort.Strings(paths)
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, []uint32{2, uint32(len(paths))})
	for _, name := range paths {
		binary.Write(&b, binary.BigEndian, []uint32{0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0})
		b.Write(id)
		binary.Write(&b, binary.BigEndian, uint16(len(name)))
		b.WriteString(name)
		b.Write(make([]byte, 8-(62+len(name))%8))
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCollectRefusesAnIndexNamingHostPaths: the agent rewrites the clone's .git/index so that
// it names "../…/<a host file>". git add, run by abox (root, on a server) in the clone, would
// hash that file into the branch, and the user's fetch would take it: content from outside the
// repository in the user's objects. Collect refuses the index; nothing of the file is read.
func TestCollectRefusesAnIndexNamingHostPaths(t *testing.T) {
	f := newFixture(t)
	f.create("idx", CreateOptions{})
	clone := f.repo.Project.Clone("idx")
	secret := filepath.Join(t.TempDir(), "host-secret")
	writeFile(t, secret, "HOST-ONLY-SECRET\n")
	// Enough ".." to reach / from any depth: extra ones stay at the root.
	escape := strings.Repeat("../", 40) + strings.TrimPrefix(secret, "/")
	blob := f.git(clone, "rev-parse", "HEAD:README")
	writeIndex(t, filepath.Join(clone, ".git/index"), blob, []string{"README", "main.go", escape})
	writeFile(t, filepath.Join(clone, "work.txt"), "x\n")
	head := f.git(f.ws, "rev-parse", "HEAD")

	_, err := f.repo.Collect(context.Background(), "idx")
	if err == nil || !strings.Contains(err.Error(), "outside its work tree") {
		t.Errorf("Collect = %v, want a refusal of the index", err)
	}
	f.hostUntouched(head)
	for _, repo := range []string{f.ws, clone} {
		if all := f.git(repo, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(all, "HOST-ONLY-SECRET") {
			t.Errorf("the host file's content is in the objects of %s", repo)
		}
	}
}

func TestInTree(t *testing.T) {
	for p, want := range map[string]bool{
		"a": true, "a/b.txt": true, ".github/workflows/ci.yml": true, "..a": true, "a..": true, ".gitignore": true,
		"../x": false, "a/../../x": false, "/etc/passwd": false, "a//b": false, "./a": false, "a/.": false,
		".git/config": false, "sub/.GIT/hooks/x": false, "": false,
	} {
		if got := inTree(p); got != want {
			t.Errorf("inTree(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestDiffReadsLinksInBatches: a branch of thousands of symlinks costs Diff a few git
// processes, not one per link (at about 2.5 ms each here, a million links would hold every
// `abox diff`, `abox merge` and the run's summary for 40 minutes). Targets are still read
// right: every link into the repository and none out of it.
func TestDiffReadsLinksInBatches(t *testing.T) {
	f := newFixture(t)
	f.create("links", CreateOptions{})
	clone := f.repo.Project.Clone("links")
	const n = 2000
	for i := 0; i < n; i++ {
		target := fmt.Sprintf("t%d", i)
		if i%2 == 1 {
			target = "../../out" + target
		}
		if err := os.Symlink(target, filepath.Join(clone, fmt.Sprintf("l%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	f.collect("links")
	count := filepath.Join(t.TempDir(), "count")
	wrapper := filepath.Join(t.TempDir(), "git")
	writeFile(t, wrapper, "#!/bin/sh\necho >>'"+count+"'\nexec git \"$@\"\n")
	os.Chmod(wrapper, 0o755)
	f.repo.Git = wrapper
	d, err := f.repo.Diff(context.Background(), "links", false)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(count)
	if calls := bytes.Count(data, []byte("\n")); calls > 20 {
		t.Errorf("Diff of %d symlinks ran git %d times", n, calls)
	}
	out := 0
	for _, file := range d.Files {
		i := 0
		fmt.Sscanf(file.Path, "l%d", &i)
		want := fmt.Sprintf("t%d", i)
		if i%2 == 1 {
			want, out = "../../out"+want, out+1
		}
		if file.Link != want || file.Out != (i%2 == 1) {
			t.Fatalf("%s: link %q, out %v; want %q", file.Path, file.Link, file.Out, want)
		}
	}
	if len(d.Files) != n || out != n/2 {
		t.Errorf("Diff lists %d files, %d out, want %d and %d", len(d.Files), out, n, n/2)
	}
}

// TestCollectChecksEveryObject: the agent commits trees git's own commands would never write —
// a path into .git (.git/hooks/post-merge), a ".." entry. git fetch from a bundle runs
// index-pack without --strict whatever fetch.fsckObjects says (git 2.39), so the user's
// repository took them unchecked; the collect must refuse them, and none of their objects may
// reach the user's repository.
func TestCollectChecksEveryObject(t *testing.T) {
	for name, entry := range map[string]string{"a .git entry": ".git", "a .. entry": "..", "a . entry": "."} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.create("obj", CreateOptions{})
			clone := f.repo.Project.Clone("obj")
			hash := exec.Command("git", "-C", clone, "hash-object", "-w", "--stdin")
			hash.Stdin = strings.NewReader("#!/bin/sh\necho PLANTED-HOOK-PAYLOAD\n")
			blob, err := hash.Output()
			if err != nil {
				t.Fatal(err)
			}
			mktree := func(listing string) string {
				cmd := exec.Command("git", "-C", clone, "mktree")
				cmd.Stdin = strings.NewReader(listing)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("mktree: %v", err)
				}
				return strings.TrimSpace(string(out))
			}
			hooks := mktree("100755 blob " + strings.TrimSpace(string(blob)) + "\tpost-merge\n")
			sub := mktree("040000 tree " + hooks + "\thooks\n")
			root := mktree(f.git(clone, "ls-tree", "HEAD") + "\n040000 tree " + sub + "\t" + entry + "\n")
			c := f.git(clone, "-c", "user.name=agent", "-c", "user.email=a@b", "commit-tree", root, "-p", "HEAD", "-m", "evil tree")
			f.git(clone, "update-ref", "HEAD", c)
			head := f.git(f.ws, "rev-parse", "HEAD")

			if _, err := f.repo.Collect(context.Background(), "obj"); err == nil {
				t.Errorf("Collect of a tree with %s took it", entry)
			}
			f.hostUntouched(head)
			if all := f.git(f.ws, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(all, "PLANTED-HOOK-PAYLOAD") {
				t.Error("the planted tree's blob is in the user's objects")
			}
			if out, err := exec.Command("git", "-C", f.ws, "rev-parse", "--verify", "--quiet", "abox/obj").Output(); err == nil {
				t.Errorf("a refused collect made the branch: %s", out)
			}
		})
	}
}

// TestCollectLeavesOutATrackedGitlink: the agent adds a gitlink to the index and gives its
// directory a .git file naming a repository elsewhere on the host. git add, root in the
// collect, would read that repository's HEAD and record it on the branch; the gitlink is left
// out instead, and reported.
func TestCollectLeavesOutATrackedGitlink(t *testing.T) {
	f := newFixture(t)
	host := filepath.Join(t.TempDir(), "host")
	f.git(filepath.Dir(host), "init", "--quiet", host)
	f.git(host, "commit", "--quiet", "--allow-empty", "-m", "a host repository's commit")
	secret := f.git(host, "rev-parse", "HEAD")
	f.create("gl", CreateOptions{})
	clone := f.repo.Project.Clone("gl")
	f.git(clone, "update-index", "--add", "--cacheinfo", "160000,"+f.git(clone, "rev-parse", "HEAD")+",sub")
	writeFile(t, filepath.Join(clone, "sub/.git"), "gitdir: "+filepath.Join(host, ".git")+"\n")
	writeFile(t, filepath.Join(clone, "work.txt"), "x\n")
	run := f.collect("gl")
	if got := f.git(f.ws, "ls-tree", "abox/gl", "sub"); strings.Contains(got, secret) {
		t.Errorf("the branch records the host repository's HEAD: %s", got)
	}
	if fmt.Sprint(run.LeftOut) != fmt.Sprint([]Big{{Path: "sub", Type: "nested git repository"}}) {
		t.Errorf("LeftOut = %v, want sub as a nested repository", run.LeftOut)
	}
	if f.git(f.ws, "show", "abox/gl:work.txt") != "x" {
		t.Error("the rest of the work is not on the branch")
	}
}

// TestCollectMessageEscapesNames: the end-of-run commit names what it left out, names the agent
// chose. One holding terminal escapes and a newline must not reach the user's `git log` raw.
func TestCollectMessageEscapesNames(t *testing.T) {
	f := newFixture(t)
	f.create("esc", CreateOptions{})
	clone := f.repo.Project.Clone("esc")
	name := "repo\x1b]0;pwned\x07\nLeft out: nothing"
	f.git(clone, "init", "--quiet", filepath.Join(clone, name))
	writeFile(t, filepath.Join(clone, "work.txt"), "x\n")
	run := f.collect("esc")
	if len(run.LeftOut) != 1 || run.LeftOut[0].Path != name {
		t.Fatalf("LeftOut = %+v, want the nested repository", run.LeftOut)
	}
	msg := f.git(f.ws, "log", "-1", "--format=%B", "abox/esc")
	if strings.ContainsAny(msg, "\x1b\x07") || strings.Count("\n"+msg, "\nLeft out:") != 1 {
		t.Errorf("the end-of-run commit's message holds the name raw: %q", msg)
	}
}
