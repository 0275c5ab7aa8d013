package isolate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/paths"
)

// fixture is a user's repository with one commit and an abox state directory, both in
// t.TempDir(), and a HOME whose only config is the user's identity.
type fixture struct {
	t    *testing.T
	ws   string
	repo *Repo
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("these tests need git: %v", err)
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	ws := filepath.Join(root, "proj")
	for _, d := range []string{home, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = User\n\temail = user@example.invalid\n[init]\n\tdefaultBranch = main\n")
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	f := &fixture{t: t, ws: ws}
	f.git(ws, "init", "--quiet")
	writeFile(t, filepath.Join(ws, "README"), "hello\n")
	writeFile(t, filepath.Join(ws, "main.go"), "package main\n")
	f.git(ws, "add", ".")
	f.git(ws, "commit", "--quiet", "-m", "first")
	p := paths.Paths{State: filepath.Join(root, "state")}
	f.repo = &Repo{Project: p.Project(ws)}
	return f
}

// git runs the test's own git (the user at the host, or the agent in a clone).
func (f *fixture) git(dir string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) create(id string, o CreateOptions) *Run {
	f.t.Helper()
	o.ID = id
	run, err := f.repo.Create(context.Background(), o)
	if err != nil {
		f.t.Fatalf("Create(%s): %v", id, err)
	}
	return run
}

func (f *fixture) collect(id string) *Run {
	f.t.Helper()
	run, err := f.repo.Collect(context.Background(), id)
	if err != nil {
		f.t.Fatalf("Collect(%s): %v", id, err)
	}
	return run
}

// hostUntouched fails unless the user's HEAD is head and the working tree and index are clean.
func (f *fixture) hostUntouched(head string) {
	f.t.Helper()
	if got := f.git(f.ws, "rev-parse", "HEAD"); got != head {
		f.t.Errorf("the user's HEAD moved: %s, want %s", got, head)
	}
	if st := f.git(f.ws, "status", "--porcelain"); st != "" {
		f.t.Errorf("the user's tree changed:\n%s", st)
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestThreeClonesArriveAndMerge(t *testing.T) {
	f := newFixture(t)
	head := f.git(f.ws, "rev-parse", "HEAD")
	ids := []string{"run-a", "run-b", "run-c"}
	for _, id := range ids {
		f.create(id, CreateOptions{})
	}
	// Each agent writes its own file; run-b also commits it itself.
	for _, id := range ids {
		writeFile(t, filepath.Join(f.repo.Project.Clone(id), id+".txt"), "from "+id+"\n")
	}
	clone := f.repo.Project.Clone("run-b")
	f.git(clone, "add", "run-b.txt")
	f.git(clone, "-c", "user.name=agent", "-c", "user.email=agent@sandbox", "commit", "--quiet", "-m", "agent's own commit")
	for _, id := range ids {
		run := f.collect(id)
		if got := f.git(f.ws, "rev-parse", "refs/heads/abox/"+id); got != run.Tip {
			t.Errorf("branch abox/%s = %s, want the collected tip %s", id, got, run.Tip)
		}
		if got := f.git(f.ws, "show", "abox/"+id+":"+id+".txt"); got != "from "+id {
			t.Errorf("abox/%s:%s.txt = %q", id, id, got)
		}
		if exists(filepath.Join(f.ws, id+".txt")) {
			t.Errorf("%s.txt is in the user's tree before any merge", id)
		}
	}
	f.hostUntouched(head)
	if msg := f.git(f.ws, "log", "-1", "--format=%s", "abox/run-a"); msg != "abox: uncommitted changes at the end of run run-a" {
		t.Errorf("run-a's last commit is %q", msg)
	}
	if msg := f.git(f.ws, "log", "-1", "--format=%s", "abox/run-b"); msg != "agent's own commit" {
		t.Errorf("run-b, which left nothing uncommitted, ends with %q", msg)
	}

	for _, id := range ids[:2] {
		run, err := f.repo.Merge(context.Background(), id, MergeOptions{})
		if err != nil {
			t.Fatalf("Merge(%s): %v", id, err)
		}
		if run.State != Merged || run.Into != "main" {
			t.Errorf("Merge(%s) recorded %s into %q", id, run.State, run.Into)
		}
		if data, err := os.ReadFile(filepath.Join(f.ws, id+".txt")); err != nil || string(data) != "from "+id+"\n" {
			t.Errorf("after Merge(%s) the file reads %q, %v", id, data, err)
		}
	}
	if exists(filepath.Join(f.ws, "run-c.txt")) {
		t.Error("run-c, never merged, is in the tree")
	}
	if _, err := f.repo.Merge(context.Background(), "run-a", MergeOptions{}); err == nil {
		t.Error("a merged run merged again")
	}
	run, err := f.repo.Discard(context.Background(), "run-c")
	if err != nil {
		t.Fatal(err)
	}
	if run.State != Discarded || exists(f.repo.Project.Clone("run-c")) {
		t.Errorf("Discard: state %s, clone still there: %v", run.State, exists(f.repo.Project.Clone("run-c")))
	}
	if out, err := exec.Command("git", "-C", f.ws, "rev-parse", "--verify", "--quiet", "refs/heads/abox/run-c").Output(); err == nil {
		t.Errorf("the discarded branch is still there: %s", out)
	}
	runs, err := f.repo.List()
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, r := range runs {
		states = append(states, r.ID+"="+r.State)
	}
	if got := strings.Join(states, " "); got != "run-a=merged run-b=merged run-c=discarded" {
		t.Errorf("List = %s", got)
	}
}

func TestDiffFlagsWorkflowFirst(t *testing.T) {
	f := newFixture(t)
	f.create("wf", CreateOptions{})
	clone := f.repo.Project.Clone("wf")
	writeFile(t, filepath.Join(clone, "a.txt"), "a\n")
	writeFile(t, filepath.Join(clone, "zz.txt"), "z\n")
	writeFile(t, filepath.Join(clone, ".github/workflows/ci.yml"), "on: push\njobs: {}\n")
	writeFile(t, filepath.Join(clone, "sub/Makefile"), "all:\n\ttrue\n")
	f.collect("wf")
	d, err := f.repo.Diff(context.Background(), "wf", true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, file := range d.Files {
		got = append(got, file.Path+map[bool]string{true: "!", false: ""}[file.Exec])
	}
	if want := ".github/workflows/ci.yml! sub/Makefile! a.txt zz.txt"; strings.Join(got, " ") != want {
		t.Errorf("Diff files = %s, want %s", strings.Join(got, " "), want)
	}
	if !strings.Contains(d.Stat, "4 files changed") || !strings.Contains(d.Patch, "+on: push") {
		t.Errorf("stat %q / patch %q", d.Stat, d.Patch)
	}
}

func TestMergeRefusesDirtyTree(t *testing.T) {
	f := newFixture(t)
	f.create("d1", CreateOptions{})
	writeFile(t, filepath.Join(f.repo.Project.Clone("d1"), "new.txt"), "x\n")
	f.collect("d1")
	head := f.git(f.ws, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(f.ws, "README"), "edited by the user\n")
	_, err := f.repo.Merge(context.Background(), "d1", MergeOptions{})
	if !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "README") {
		t.Fatalf("Merge on a dirty tree = %v, want ErrDirty naming README", err)
	}
	if got := f.git(f.ws, "rev-parse", "HEAD"); got != head || exists(filepath.Join(f.ws, "new.txt")) {
		t.Error("a refused merge changed the repository")
	}
	if run, _ := f.repo.Load("d1"); run.State != Pending {
		t.Errorf("a refused merge recorded %s", run.State)
	}
}

func TestMaskedPathsAbsentFromClone(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.ws, ".env"), "TOKEN=committed\n")
	writeFile(t, filepath.Join(f.ws, "secrets/key.pem"), "KEY\n")
	writeFile(t, filepath.Join(f.ws, "deep/.env.local"), "TOKEN=deep\n")
	f.git(f.ws, "add", ".")
	f.git(f.ws, "commit", "--quiet", "-m", "secrets, tracked")
	mask := []string{".env*", "secrets/", ".git/hooks"}

	// Without the worktree: the masked files are removed in the start commit and come back
	// on the branch, so a merge deletes none of the user's files.
	run := f.create("m1", CreateOptions{Mask: mask})
	clone := f.repo.Project.Clone("m1")
	if want := ".env deep/.env.local secrets/key.pem"; strings.Join(run.Masked, " ") != want {
		t.Errorf("Masked = %v, want %s", run.Masked, want)
	}
	for _, p := range run.Masked {
		if exists(filepath.Join(clone, p)) {
			t.Errorf("%s is in the clone's work tree", p)
		}
	}
	if ls := f.git(clone, "ls-files"); strings.Contains(ls, ".env") || strings.Contains(ls, "secrets") {
		t.Errorf("the clone's index holds masked paths:\n%s", ls)
	}
	writeFile(t, filepath.Join(clone, "work.txt"), "done\n")
	f.collect("m1")
	if _, err := f.repo.Merge(context.Background(), "m1", MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.ws, ".env")); string(data) != "TOKEN=committed\n" {
		t.Errorf("after merge .env reads %q", data)
	}
	if st := f.git(f.ws, "status", "--porcelain"); st != "" || !exists(filepath.Join(f.ws, "work.txt")) {
		t.Errorf("after merge: status %q, work.txt there: %v", st, exists(filepath.Join(f.ws, "work.txt")))
	}

	// From the worktree: uncommitted changes come along, except a masked file's.
	writeFile(t, filepath.Join(f.ws, ".env"), "TOKEN=uncommitted-secret\n")
	writeFile(t, filepath.Join(f.ws, "main.go"), "package main // edited\n")
	f.create("m2", CreateOptions{Mask: mask, FromWorktree: true})
	clone = f.repo.Project.Clone("m2")
	if data, _ := os.ReadFile(filepath.Join(clone, "main.go")); string(data) != "package main // edited\n" {
		t.Errorf("the clone's main.go reads %q, want the worktree's", data)
	}
	if exists(filepath.Join(clone, ".env")) {
		t.Error(".env is in the clone")
	}
	all := f.git(clone, "cat-file", "--batch-all-objects", "--batch")
	if strings.Contains(all, "uncommitted-secret") {
		t.Error("the masked file's uncommitted content is in the clone's objects")
	}
	if msg := f.git(clone, "log", "-1", "--format=%s"); !strings.Contains(msg, "uncommitted changes") || !strings.Contains(msg, "masked paths removed") {
		t.Errorf("the start commit is %q", msg)
	}
	if st := f.git(f.ws, "status", "--porcelain"); st != "M .env\n M main.go" {
		t.Errorf("Create changed the user's status: %q", st)
	}
}

func TestCreateRefuses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.create("dup", CreateOptions{})
	sub := filepath.Join(f.ws, "sub")
	writeFile(t, filepath.Join(sub, "x"), "x\n")
	notGit := t.TempDir()
	for _, tc := range []struct {
		name, ws, id, want string
	}{
		{"a path as id", f.ws, "../escape", "is not a run id"},
		{"an upper-case id", f.ws, "Run", "is not a run id"},
		{"an existing run", f.ws, "dup", "already exists"},
		{"a subdirectory of the repository", sub, "s1", "not its top level"},
		{"no repository", notGit, "n1", "is not a git repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Repo{Project: paths.Paths{State: f.repo.Project.Dir}.Project(tc.ws)}
			if tc.ws == f.ws {
				r = f.repo
			}
			_, err := r.Create(ctx, CreateOptions{ID: tc.id})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Create(%q) in %s = %v, want %q", tc.id, tc.ws, err, tc.want)
			}
			if tc.id != "dup" && exists(r.Project.Clone(tc.id)) {
				t.Error("a refused Create left a clone")
			}
		})
	}
	if _, err := f.repo.Load("nosuch"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(nosuch) = %v, want ErrNotFound", err)
	}
	if _, err := f.repo.Diff(ctx, "dup", false); err == nil || !strings.Contains(err.Error(), "not been collected") {
		t.Errorf("Diff of an uncollected run = %v", err)
	}
}

// TestOrphanClone: a clone left without a record (abox killed while making it) is listed by
// Orphans and removed by Discard; a recorded run is not an orphan.
func TestOrphanClone(t *testing.T) {
	f := newFixture(t)
	run := f.create("kept1", CreateOptions{})
	orphan := f.repo.Project.Clone("lost1")
	writeFile(t, filepath.Join(orphan, "half.txt"), "half a clone\n")
	got, err := f.repo.Orphans()
	if err != nil || len(got) != 1 || got[0] != "lost1" {
		t.Fatalf("Orphans = %q, %v; want [lost1]", got, err)
	}
	d, err := f.repo.Discard(context.Background(), "lost1")
	if err != nil || d.State != Discarded {
		t.Fatalf("Discard(lost1) = %+v, %v", d, err)
	}
	if _, err := os.Lstat(orphan); err == nil {
		t.Error("the orphan clone is still there")
	}
	if got, _ := f.repo.Orphans(); len(got) != 0 {
		t.Errorf("Orphans after Discard = %q", got)
	}
	if _, err := os.Lstat(f.repo.Project.Clone(run.ID)); err != nil {
		t.Errorf("the recorded run's clone went too: %v", err)
	}
	if _, err := f.repo.Discard(context.Background(), "never1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Discard of nothing = %v, want ErrNotFound", err)
	}
}

// TestSweep: nuke's sweep removes every clone; a collected run stays pending and still merges
// from its branch alone, one never collected is recorded as discarded.
func TestSweep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	done := f.create("done1", CreateOptions{})
	writeFile(t, filepath.Join(f.repo.Project.Clone(done.ID), "new.txt"), "new\n")
	if _, err := f.repo.Collect(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	cut := f.create("cut1", CreateOptions{})
	removed, err := f.repo.Sweep()
	if err != nil || len(removed) != 2 {
		t.Fatalf("Sweep = %q, %v; want both clones", removed, err)
	}
	if ents, _ := os.ReadDir(f.repo.Project.Clones()); len(ents) != 0 {
		t.Errorf("clones left: %v", ents)
	}
	if run, _ := f.repo.Load(cut.ID); run.State != Discarded {
		t.Errorf("the uncollected run is %s, want discarded", run.State)
	}
	if _, err := f.repo.Merge(ctx, done.ID, MergeOptions{}); err != nil {
		t.Fatalf("Merge after Sweep: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.ws, "new.txt")); string(data) != "new\n" {
		t.Errorf("new.txt after the merge = %q", data)
	}
}

// TestMaskedLinkTargetsAbsentFromClone: a live run masks what a masked symlink leads to inside
// the workspace, and what a literal pattern names through a linked directory
// (internal/sandbox.FindMasks); an isolated run's clone must lack the same content. A link out
// of the repository masks nothing more; a link to the repository's top is refused.
func TestMaskedLinkTargetsAbsentFromClone(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.ws, "config/prod.env"), "TOKEN=through-a-link\n")
	writeFile(t, filepath.Join(f.ws, "settings/secret.yml"), "KEY=through-a-linked-dir\n")
	writeFile(t, filepath.Join(f.ws, "real/chain.txt"), "KEY=through-two-links\n")
	writeFile(t, filepath.Join(f.ws, "real/other.txt"), "not masked\n")
	for link, target := range map[string]string{
		".env": "config/prod.env", "conf": "settings", ".env.local": "hop", "hop": "real/chain.txt", ".env.out": "/etc/hostname",
	} {
		if err := os.Symlink(target, filepath.Join(f.ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	f.git(f.ws, "add", ".")
	f.git(f.ws, "commit", "--quiet", "-m", "linked secrets")
	run := f.create("ln", CreateOptions{Mask: []string{".env*", "conf/secret.yml"}})
	want := ".env .env.local .env.out config/prod.env hop real/chain.txt settings/secret.yml"
	if got := strings.Join(run.Masked, " "); got != want {
		t.Errorf("Masked = %s, want %s", got, want)
	}
	clone := f.repo.Project.Clone("ln")
	if leaked, _ := exec.Command("git", "-C", clone, "grep", "-l", "-e", "KEY=", "-e", "TOKEN=", "HEAD").Output(); len(leaked) > 0 {
		t.Errorf("the clone's tree holds masked content through links:\n%s", leaked)
	}
	if !exists(filepath.Join(clone, "real/other.txt")) || exists(filepath.Join(clone, "config/prod.env")) {
		t.Error("the clone holds a link's target or lacks a file no mask covers")
	}
	f.collect("ln")
	if _, err := f.repo.Merge(context.Background(), "ln", MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(f.ws, "config/prod.env")); string(data) != "TOKEN=through-a-link\n" {
		t.Errorf("after merge config/prod.env reads %q", data)
	}
	if st := f.git(f.ws, "status", "--porcelain"); st != "" {
		t.Errorf("after merge: %q", st)
	}

	if err := os.Symlink(".", filepath.Join(f.ws, ".env.top")); err != nil {
		t.Fatal(err)
	}
	f.git(f.ws, "add", ".env.top")
	f.git(f.ws, "commit", "--quiet", "-m", "a link to the top")
	if _, err := f.repo.Create(context.Background(), CreateOptions{ID: "top", Mask: []string{".env*"}}); err == nil || !strings.Contains(err.Error(), "repository's top") {
		t.Errorf("Create with a masked link to the top = %v, want a refusal", err)
	}
}
