package isolate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// hookNames are the hooks git may run for the commands abox uses, on either side.
var hookNames = []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-push", "post-checkout",
	"post-merge", "pre-merge-commit", "reference-transaction", "pre-auto-gc", "post-rewrite", "push-to-checkout",
	"pre-receive", "update", "post-receive", "post-update", "post-index-change", "fsmonitor-watchman"}

// plant does what a hostile agent can do to its clone: hooks in .git/hooks and in a directory
// core.hooksPath names, config keys that run a program (fsmonitor, filter and diff drivers, a
// pager, an editor, signing, credential and ssh helpers, upload-pack's hook, an include of more),
// attributes that select the drivers, alternates into another repository, symlinks out of the
// repository and a 1 GiB (sparse) file. Every planted program creates a file in marks named
// after itself. It returns the directory the symlinks point into.
func plant(t *testing.T, clone, marks string) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(marks), filepath.Base(marks)+"-bin")
	script := func(name string) string {
		p := filepath.Join(bin, name)
		writeFile(t, p, fmt.Sprintf("#!/bin/sh\ntouch '%s/%s'\ncat\n", marks, name))
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hooks := filepath.Join(bin, "hooks")
	for _, h := range hookNames {
		for dir, tag := range map[string]string{filepath.Join(clone, ".git/hooks"): "hook-", hooks: "hookspath-"} {
			p := filepath.Join(dir, h)
			writeFile(t, p, fmt.Sprintf("#!/bin/sh\ntouch '%s/%s%s'\ncat >/dev/null\nexit 0\n", marks, tag, h))
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	include := filepath.Join(bin, "included.gitconfig")
	writeFile(t, include, fmt.Sprintf("[core]\n\tfsmonitor = %s\n", script("included-fsmonitor")))
	cfg := fmt.Sprintf(`[core]
	hooksPath = %s
	fsmonitor = %s
	pager = %s
	editor = %s
	sshCommand = %s
	alternateRefsCommand = %s
	untrackedCache = true
[filter "evil"]
	clean = %s
	smudge = %s
	required = true
[filter "proc"]
	process = %s
[diff "evil"]
	textconv = %s
	command = %s
[merge "evil"]
	driver = %s
[commit]
	gpgSign = true
[gpg]
	program = %s
[credential]
	helper = %s
[uploadpack]
	packObjectsHook = %s
[include]
	path = %s
`, hooks, script("fsmonitor"), script("pager"), script("editor"), script("ssh"), script("alternate-refs"),
		script("clean"), script("smudge"), script("process"), script("textconv"), script("diff-command"),
		script("merge-driver"), script("gpg"), script("credential"), script("pack-objects-hook"), include)
	f, err := os.OpenFile(filepath.Join(clone, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(cfg)
	f.Close()
	writeFile(t, filepath.Join(clone, ".gitattributes"), "* filter=evil diff=evil merge=evil\n*.proc filter=proc\n")
	writeFile(t, filepath.Join(clone, "work.txt"), "the agent's work\n")
	writeFile(t, filepath.Join(clone, "x.proc"), "through the process filter\n")

	other := filepath.Join(filepath.Dir(marks), filepath.Base(marks)+"-other")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", other).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	writeFile(t, filepath.Join(clone, ".git/objects/info/alternates"), filepath.Join(other, "objects")+"\n")

	// A nested repository whose .git file leads to a repository elsewhere on the host.
	writeFile(t, filepath.Join(clone, "nested/.git"), "gitdir: "+other+"\n")
	writeFile(t, filepath.Join(clone, "nested/file"), "x\n")

	outside := filepath.Join(filepath.Dir(marks), filepath.Base(marks)+"-outside")
	writeFile(t, filepath.Join(outside, "secret"), "OUTSIDE-SECRET\n")
	for name, target := range map[string]string{"escape": filepath.Join(outside, "secret"), "escdir": outside, "up": "../../.."} {
		if err := os.Symlink(target, filepath.Join(clone, name)); err != nil {
			t.Fatal(err)
		}
	}
	// FIFOs, one untracked and one in place of a tracked file: git must not block reading them.
	os.Remove(filepath.Join(clone, "README"))
	for _, p := range []string{"pipe", "README"} {
		if err := exec.Command("mkfifo", filepath.Join(clone, p)).Run(); err != nil {
			t.Fatal(err)
		}
	}
	big, err := os.Create(filepath.Join(clone, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	big.Close()
	if err := os.MkdirAll(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	return outside
}

func marked(t *testing.T, marks string) []string {
	t.Helper()
	ents, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestPlantsAreLive shows that the plants run when git trusts the clone: without the controls
// the attack test below would see these marks.
func TestPlantsAreLive(t *testing.T) {
	f := newFixture(t)
	f.create("ctl", CreateOptions{})
	clone := f.repo.Project.Clone("ctl")
	marks := filepath.Join(t.TempDir(), "marks")
	plant(t, clone, marks)
	os.Remove(filepath.Join(clone, "big.bin"))
	cmd := exec.Command("git", "-C", clone, "-c", "user.name=a", "-c", "user.email=a@b", "add", "-A")
	cmd.Run()
	cmd = exec.Command("git", "-C", clone, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "x")
	cmd.Run()
	got := strings.Join(marked(t, marks), " ")
	for _, want := range []string{"clean", "fsmonitor", "hookspath-pre-commit"} {
		if !strings.Contains(got, want) {
			t.Errorf("plain git in the planted clone ran %q, not %s", got, want)
		}
	}
}

func TestCollectDiffMergeRunNothingFromTheClone(t *testing.T) {
	f := newFixture(t)
	f.create("evil", CreateOptions{})
	clone := f.repo.Project.Clone("evil")
	marks := filepath.Join(t.TempDir(), "marks")
	outside := plant(t, clone, marks)
	ctx := context.Background()

	run := f.collect("evil")
	if got := marked(t, marks); len(got) > 0 {
		t.Fatalf("Collect ran %v", got)
	}
	// The untracked FIFO is not listed: git passes over it, as it does over any untracked
	// special file. The tracked one would make git refuse the whole commit.
	want := []Big{{Path: "README", Type: "fifo"}, {Path: "big.bin", Size: 1 << 30}, {Path: "nested", Type: "nested git repository"}}
	if fmt.Sprint(run.LeftOut) != fmt.Sprint(want) {
		t.Errorf("LeftOut = %v, want %v", run.LeftOut, want)
	}
	if exists(filepath.Join(clone, ".git/objects/info/alternates")) {
		t.Error("the planted alternates survived Collect")
	}
	if got := f.git(f.ws, "cat-file", "-p", "abox/evil:escape"); got != filepath.Join(outside, "secret") {
		t.Errorf("the symlink was committed as %q, not as its target's name", got)
	}
	if all := f.git(f.ws, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(all, "OUTSIDE-SECRET") {
		t.Error("content from outside the repository reached the user's objects")
	}
	for _, p := range []string{"big.bin", "nested"} {
		if out, err := exec.Command("git", "-C", f.ws, "cat-file", "-e", "abox/evil:"+p).CombinedOutput(); err == nil {
			t.Errorf("%s was committed: %s", p, out)
		}
	}
	if got := f.git(f.ws, "show", "abox/evil:x.proc"); got != "through the process filter" {
		t.Errorf("x.proc = %q", got)
	}

	d, err := f.repo.Diff(ctx, "evil", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := marked(t, marks); len(got) > 0 {
		t.Fatalf("Diff ran %v", got)
	}
	out := map[string]bool{}
	for _, file := range d.Files {
		if file.Out {
			out[file.Path] = true
		}
	}
	if !out["escape"] || !out["escdir"] || !out["up"] || len(out) != 3 {
		t.Errorf("links flagged as leading out: %v, want escape, escdir and up", out)
	}
	if d.Files[0].Path != ".gitattributes" || !d.Files[0].Exec {
		t.Errorf("the first file is %+v, want .gitattributes flagged", d.Files[0])
	}

	_, err = f.repo.Merge(ctx, "evil", MergeOptions{})
	if err == nil || !strings.Contains(err.Error(), "escape") {
		t.Fatalf("Merge of links out of the repository = %v, want a refusal naming them", err)
	}
	if _, err := f.repo.Merge(ctx, "evil", MergeOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := marked(t, marks); len(got) > 0 {
		t.Fatalf("Merge ran %v", got)
	}
	if st, err := os.Lstat(filepath.Join(f.ws, "escape")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("escape in the user's tree: %v, %v; want a symlink", st, err)
	}
	if got := marked(t, outside); strings.Join(got, " ") != "secret" {
		t.Errorf("the directory the links lead to now holds %v", got)
	}
	if exists(filepath.Join(f.ws, "big.bin")) {
		t.Error("big.bin was merged")
	}
}

func TestMergeRefusesBigCommittedFile(t *testing.T) {
	f := newFixture(t)
	f.repo.MaxFile = 1 << 20 // the test's bound, so that the agent's commit costs little
	f.create("big", CreateOptions{})
	clone := f.repo.Project.Clone("big")
	b, err := os.Create(filepath.Join(clone, "blob.bin"))
	if err != nil {
		t.Fatal(err)
	}
	b.Truncate(2 << 20)
	b.Close()
	f.git(clone, "add", "blob.bin")
	f.git(clone, "-c", "user.name=agent", "-c", "user.email=a@b", "commit", "-q", "-m", "big")
	f.collect("big")
	d, err := f.repo.Diff(context.Background(), "big", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || !d.Files[0].Big || d.Files[0].Size != 2<<20 {
		t.Fatalf("Diff files = %+v, want blob.bin big, of 2097152 bytes", d.Files)
	}
	_, err = f.repo.Merge(context.Background(), "big", MergeOptions{})
	if err == nil || !strings.Contains(err.Error(), "blob.bin (2097152 bytes") {
		t.Fatalf("Merge = %v, want a refusal naming blob.bin and its size", err)
	}
	if exists(filepath.Join(f.ws, "blob.bin")) {
		t.Fatal("a refused merge brought blob.bin")
	}
	if _, err := f.repo.Merge(context.Background(), "big", MergeOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(f.ws, "blob.bin")); err != nil || st.Size() != 2<<20 {
		t.Errorf("a forced merge: %v, %v", st, err)
	}
}

func TestCollectRefusesARedirectedGitDir(t *testing.T) {
	for name, break_ := range map[string]func(t *testing.T, clone, elsewhere string){
		".git is a symlink": func(t *testing.T, clone, elsewhere string) {
			os.Rename(filepath.Join(clone, ".git"), filepath.Join(clone, "moved"))
			os.Symlink(filepath.Join(clone, "moved"), filepath.Join(clone, ".git"))
		},
		".git is a gitfile": func(t *testing.T, clone, elsewhere string) {
			os.RemoveAll(filepath.Join(clone, ".git"))
			writeFile(t, filepath.Join(clone, ".git"), "gitdir: "+elsewhere+"\n")
		},
		"a ref is a symlink": func(t *testing.T, clone, elsewhere string) {
			os.Symlink(filepath.Join(elsewhere, "HEAD"), filepath.Join(clone, ".git/refs/heads/x"))
		},
		"objects is a symlink": func(t *testing.T, clone, elsewhere string) {
			os.RemoveAll(filepath.Join(clone, ".git/objects"))
			os.Symlink(filepath.Join(elsewhere, "objects"), filepath.Join(clone, ".git/objects"))
		},
		"a FIFO in .git": func(t *testing.T, clone, elsewhere string) {
			if err := exec.Command("mkfifo", filepath.Join(clone, ".git/packed-refs")).Run(); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.create("r1", CreateOptions{})
			clone := f.repo.Project.Clone("r1")
			break_(t, clone, filepath.Join(f.ws, ".git"))
			writeFile(t, filepath.Join(clone, "work.txt"), "x\n")
			head := f.git(f.ws, "rev-parse", "HEAD")
			if _, err := f.repo.Collect(context.Background(), "r1"); err == nil || !strings.Contains(err.Error(), "refusing") && !strings.Contains(err.Error(), "not a directory") {
				t.Fatalf("Collect = %v, want a refusal", err)
			}
			f.hostUntouched(head)
			if out, err := exec.Command("git", "-C", f.ws, "rev-parse", "--verify", "--quiet", "abox/r1").Output(); err == nil {
				t.Errorf("a refused collect made the branch: %s", out)
			}
		})
	}
}
