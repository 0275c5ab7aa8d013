package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitRun runs git in dir as the user would, with a committer, or fails the test.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := runGit(t, dir, append([]string{"-c", "user.name=U", "-c", "user.email=u@x.invalid"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadIndexMatchesGit: the entries an index marks skip-worktree or assume-unchanged, and its
// gitlinks, are read as git lays them out, in index versions 2, 3 and 4 and with SHA-1 and
// SHA-256 object names; git's own ls-files -v says which entries are flagged.
func TestReadIndexMatchesGit(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		for _, version := range []string{"2", "3", "4"} {
			t.Run(format+"/v"+version, func(t *testing.T) {
				ws := t.TempDir()
				if _, err := runGit(t, ws, "init", "-q", "--object-format="+format, ws); err != nil {
					t.Fatal(err)
				}
				files := map[string]string{"README": "x"}
				for i := 0; i < 30; i++ {
					files[fmt.Sprintf("dir/sub/file-with-a-long-name-%02d.txt", i)] = "x"
				}
				files[".github/workflows/lint.yml"] = "on: push"
				write(t, ws, files)
				gitRun(t, ws, "add", "-A")
				gitRun(t, ws, "commit", "-q", "-m", "x")
				gitRun(t, ws, "update-index", "--skip-worktree", ".github/workflows/lint.yml", "dir/sub/file-with-a-long-name-07.txt")
				gitRun(t, ws, "update-index", "--assume-unchanged", "README", "dir/sub/file-with-a-long-name-07.txt")
				gitRun(t, ws, "update-index", "--index-version", version)
				data, err := os.ReadFile(filepath.Join(ws, ".git", "index"))
				if err != nil {
					t.Fatal(err)
				}
				entries, err := readIndex(data)
				if err != nil {
					t.Fatalf("readIndex: %v", err)
				}
				var got []string
				for _, e := range entries {
					got = append(got, e.path+" "+e.flags)
				}
				want := []string{".github/workflows/lint.yml skip-worktree", "README assume-unchanged",
					"dir/sub/file-with-a-long-name-07.txt skip-worktree, assume-unchanged"}
				if !slices.Equal(got, want) {
					t.Errorf("flagged entries = %q, want %q", got, want)
				}
				// git's own account: ls-files -v prints S for skip-worktree, a lower-case tag for
				// assume-unchanged
				out, err := runGit(t, ws, "ls-files", "-v", ".github/workflows/lint.yml")
				if err != nil || !strings.HasPrefix(out, "S ") {
					t.Errorf("git ls-files -v = %q, %v: the case's own premise fails", out, err)
				}
			})
		}
	}
}

// TestReadIndexHostile: a truncated, garbled or lying index is an error, never a panic or a
// read past its end.
func TestReadIndexHostile(t *testing.T) {
	ws := t.TempDir()
	gitInit(t, ws, "", "")
	write(t, ws, map[string]string{"a": "x", "b/c": "y"})
	gitRun(t, ws, "add", "-A")
	good, err := os.ReadFile(filepath.Join(ws, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(good); i++ {
		readIndex(good[:i])
		bad := slices.Clone(good)
		bad[i] ^= 0xff
		readIndex(bad)
	}
	lying := slices.Clone(good)
	lying[11] = 0xff // a count of entries the file does not hold
	if _, err := readIndex(lying); err == nil {
		t.Error("an index claiming more entries than it holds was read")
	}
}

// TestGitStateFlagsHiddenIndexEntries: the red team's attack — a CI workflow committed on the
// user's branch, marked skip-worktree and removed from the work tree — is in the next snapshot as
// a flagged index entry and as a moved branch tip, though no file of the work tree changed; a
// replace ref, loose or packed, grafts and alternates are in the git state too.
func TestGitStateFlagsHiddenIndexEntries(t *testing.T) {
	ws := t.TempDir()
	gitInit(t, ws, "", "")
	write(t, ws, map[string]string{"Makefile": "all:\n"})
	gitRun(t, ws, "add", "-A")
	gitRun(t, ws, "commit", "-q", "-m", "first")
	before := Take(Scope{Workspace: ws})
	if before.Tips["HEAD"] == "" || len(before.Tips) != 2 {
		t.Fatalf("tips = %v, want HEAD and the branch", before.Tips)
	}
	write(t, ws, map[string]string{".github/workflows/lint.yml": "on: push\n"})
	gitRun(t, ws, "add", "-A")
	gitRun(t, ws, "commit", "-q", "-m", "Fix a typo")
	gitRun(t, ws, "update-index", "--skip-worktree", ".github/workflows/lint.yml")
	if err := os.RemoveAll(filepath.Join(ws, ".github")); err != nil {
		t.Fatal(err)
	}
	blob := gitRun(t, ws, "rev-parse", "HEAD:Makefile")
	evil := gitRun(t, ws, "hash-object", "-w", "--stdin", "--path=x") // the empty blob
	gitRun(t, ws, "replace", blob, evil)
	write(t, ws, map[string]string{".git/info/grafts": "", ".git/objects/info/alternates": "/tmp/elsewhere\n"})
	after := Take(Scope{Workspace: ws})
	got := map[string]string{}
	for _, c := range Compare(before, after) {
		got[c.String()] = c.Area
	}
	branch := strings.TrimPrefix(before.Tips["HEAD"], "ref: ")
	for _, want := range []string{
		"added index entry .github/workflows/lint.yml (skip-worktree)",
		"added ref refs/replace/" + blob,
		"added git file info/grafts",
		"added git file objects/info/alternates",
		"moved " + branch + ": " + short(before.Tips[branch]) + " → " + short(after.Tips[branch]),
	} {
		if _, ok := got[want]; !ok {
			t.Errorf("Compare lacks %q: %v", want, got)
		}
	}
	gitRun(t, ws, "pack-refs", "--all")
	packed := Take(Scope{Workspace: ws})
	if v := packed.Git[gitRefPrefix+"refs/replace/"+blob]; v != "packed "+evil {
		t.Errorf("the packed replace ref = %q, want packed %s", v, evil)
	}
	if packed.Tips[branch] != after.Tips[branch] {
		t.Errorf("the packed tip = %q, want %q", packed.Tips[branch], after.Tips[branch])
	}
}

// TestGitlinksReadPastTheWalksBound: the repository at a gitlink of the workspace's index is read
// even when the walk for nested repositories stopped before it, and one in node_modules, which
// the walk does not enter; the bound the walk hit is in GitCapped every time.
func TestGitlinksReadPastTheWalksBound(t *testing.T) {
	ws := t.TempDir()
	gitInit(t, ws, "", "")
	files := map[string]string{}
	for i := 0; i <= MaxNestedRepos; i++ {
		d := fmt.Sprintf("r%03d/.git/", i)
		files[d+"HEAD"], files[d+"config"] = "ref: refs/heads/main\n", ""
	}
	write(t, ws, files)
	for _, sub := range []string{"zz", "node_modules/dep"} {
		gitInit(t, filepath.Join(ws, sub), "", "[core]\n\tfsmonitor = /workspace/evil.sh\n")
		gitRun(t, filepath.Join(ws, sub), "commit", "-q", "--allow-empty", "-m", "x")
		gitRun(t, ws, "add", "-f", sub)
	}
	gitInit(t, filepath.Join(ws, "node_modules/other"), "", "[core]\n\tfsmonitor = x\n")
	snap := Take(Scope{Workspace: ws})
	for _, k := range []string{"key:zz/.git:core.fsmonitor", "key:node_modules/dep/.git:core.fsmonitor"} {
		if _, ok := snap.Git[k]; !ok {
			t.Errorf("the gitlink's repository is not read: no %s", k)
		}
	}
	if _, ok := snap.Git["key:node_modules/other/.git:core.fsmonitor"]; ok {
		t.Error("the walk entered node_modules")
	}
	if len(snap.GitCapped) != 1 || snap.GitCapped[0].Pattern != nestedBound {
		t.Errorf("GitCapped = %v, want the walk's bound", snap.GitCapped)
	}
	if again := Take(Scope{Workspace: ws}); len(again.GitCapped) != 1 {
		t.Errorf("the second snapshot's GitCapped = %v: a bound is said every time", again.GitCapped)
	}
}
