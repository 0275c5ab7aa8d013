package isolate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/linkwalk"
)

// TestResultSummary: the isolated lines of a run's summary count the files, name the
// execution-adjacent and flagged ones (at most three), say what was left out, and escape the
// agent's file names.
func TestResultSummary(t *testing.T) {
	run := &Run{ID: "r1", Branch: "abox/r1", Base: "0123456789abcdef0123"}
	res := &Result{Run: run, Diff: &Diff{Run: run, Files: []File{
		{Path: ".github/workflows/ci.yml", Status: "A", Exec: true},
		{Path: "Makefile", Status: "M", Exec: true},
		{Path: "a", Status: "A", Exec: true},
		{Path: "b\x1b[2J", Status: "A", Exec: true, Big: true},
		{Path: "c", Status: "A"},
	}, LeftOut: []Big{{Path: "big.bin", Size: 7}, {Path: "fifo", Type: "named pipe"}}}}
	var b bytes.Buffer
	res.WriteSummary(&b)
	for _, want := range []string{
		"  isolated: branch abox/r1 · 5 file(s) changed · execution-adjacent: .github/workflows/ci.yml, Makefile, a and 1 more\n",
		`  isolated: abox merge refuses without --force: b\x1b[2J` + "\n",
		"  isolated: left out of the branch: big.bin (7 bytes)\n",
		"  isolated: left out of the branch: fifo (a named pipe)\n",
		"  ↳ review with `abox diff r1`, then `abox merge r1` or `abox discard r1`\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("summary prints a raw escape: %q", b.String())
	}

	for _, tc := range []struct {
		res  *Result
		want string
	}{
		{nil, ""},
		{&Result{Run: run, Discarded: true}, ""},
		{&Result{Run: run, Err: &FinishError{ID: "r1", Step: StepCollect, Err: errors.New("x")}}, "  isolated: branch abox/r1 not collected\n"},
	} {
		var b bytes.Buffer
		tc.res.WriteSummary(&b)
		if b.String() != tc.want {
			t.Errorf("WriteSummary(%+v) = %q, want %q", tc.res, b.String(), tc.want)
		}
	}
}

// TestFinishErrorText: each failed step of Finish names the run and keeps the cause.
func TestFinishErrorText(t *testing.T) {
	cause := errors.New("boom")
	for step, want := range map[string]string{
		StepDiscard: "removing the clone of refused run r1: boom",
		StepCollect: "collecting isolated run r1: boom",
		StepDiff:    "listing what run r1 changed: boom",
	} {
		err := error(&FinishError{ID: "r1", Step: step, Err: cause})
		if err.Error() != want || !errors.Is(err, cause) {
			t.Errorf("%s: %q (wraps cause %v), want %q", step, err, errors.Is(err, cause), want)
		}
	}
}

// TestDiffText: abox diff marks execution-adjacent files "!", refused ones "✖", says where each
// symlink leads (escaped), and prints the patch only when the diff holds one.
func TestDiffText(t *testing.T) {
	run := &Run{ID: "r1", Branch: "abox/r1", Base: "0123456789abcdef0123", State: Pending}
	d := &Diff{Run: run, Files: []File{
		{Path: "Makefile", Status: "M", Exec: true},
		{Path: "l", Status: "A", Link: "../../etc", Leads: &linkwalk.Dest{Kind: linkwalk.Outside, Path: "/home/u/etc"}, Out: true},
		{Path: "n", Status: "A", Link: "y/../x", Leads: &linkwalk.Dest{Kind: linkwalk.Inside, Path: "a/x"}},
		{Path: "top", Status: "A", Link: "..", Leads: &linkwalk.Dest{Kind: linkwalk.Inside, Path: "."}},
		{Path: "h", Status: "A", Link: "y/.git/hooks", Leads: &linkwalk.Dest{Kind: linkwalk.Git, Path: ".git/hooks"}, Out: true},
		{Path: "loop", Status: "A", Link: "loop", Leads: &linkwalk.Dest{Kind: linkwalk.Unresolvable, Why: "a loop of symlinks through loop"}, Out: true},
		{Path: "u", Status: "L", Link: "a/b/../../x", Leads: &linkwalk.Dest{Kind: linkwalk.Outside, Path: "/home/u/x\x1b[2J"}, Out: true},
		{Path: "big", Status: "A", Size: 9, Big: true},
		{Path: ".env", Status: "A", Ignored: ".env"},
		{Path: "build", Status: "A", Ignored: "build/"},
		{Path: "x", Status: "D"},
	}, Stat: " 4 files changed\n"}
	var b bytes.Buffer
	d.WriteText(&b)
	want := "run r1: branch abox/r1, base 0123456789ab, pending\n" +
		"! M Makefile  (execution-adjacent)\n" +
		"✖ A l  (-> ../../etc; outside the repository: /home/u/etc)\n" +
		"  A n  (-> y/../x; leads to a/x)\n" +
		"  A top  (-> ..; leads to the repository's top)\n" +
		"✖ A h  (-> y/.git/hooks; into .git: .git/hooks)\n" +
		"✖ A loop  (-> loop; unresolvable: a loop of symlinks through loop)\n" +
		`✖ L u  (-> a/b/../../x; outside the repository: /home/u/x\x1b[2J; unchanged, but the branch changes where it leads)` + "\n" +
		"✖ A big  (9 bytes, over the bound)\n" +
		"✖ A .env  (replaces your .env, which git ignores: merge would overwrite it)\n" +
		"✖ A build  (replaces your build/, whose files git ignores: merge would delete them)\n" +
		"  D x\n" +
		" 4 files changed\n"
	if b.String() != want {
		t.Errorf("WriteText =\n%s\nwant\n%s", b.String(), want)
	}
	d.Patch = "diff --git a/x b/x\n"
	b.Reset()
	d.WriteText(&b)
	if !strings.HasSuffix(b.String(), " 4 files changed\ndiff --git a/x b/x\n") {
		t.Errorf("WriteText with a patch:\n%s", b.String())
	}
}

// TestFinish: a run that ran is collected, even under a cancelled context, and its diff
// listed; a refused run's clone is discarded; a clone that cannot be collected is a
// FinishError of the collect step.
func TestFinish(t *testing.T) {
	f := newFixture(t)
	head := f.git(f.ws, "rev-parse", "HEAD")
	ran := f.create("ran", CreateOptions{})
	writeFile(t, filepath.Join(f.repo.Project.Clone("ran"), "new.txt"), "x\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C: the branch still arrives
	res := f.repo.Finish(ctx, ran, false)
	if res.Err != nil || res.Discarded || res.Diff == nil || len(res.Diff.Files) != 1 || res.Diff.Files[0].Path != "new.txt" {
		t.Fatalf("Finish(ran) = %+v, diff %+v", res, res.Diff)
	}
	f.hostUntouched(head)

	refused := f.create("refused", CreateOptions{})
	if res := f.repo.Finish(context.Background(), refused, true); res.Err != nil || !res.Discarded {
		t.Errorf("Finish(refused) = %+v", res)
	}
	if exists(f.repo.Project.Clone("refused")) {
		t.Error("the refused run's clone is still there")
	}

	broken := f.create("broken", CreateOptions{})
	if err := os.RemoveAll(filepath.Join(f.repo.Project.Clone("broken"), ".git")); err != nil {
		t.Fatal(err)
	}
	res = f.repo.Finish(context.Background(), broken, false)
	var fe *FinishError
	if !errors.As(res.Err, &fe) || fe.Step != StepCollect || fe.ID != "broken" {
		t.Errorf("Finish(broken) = %v, want a FinishError of the collect step", res.Err)
	}
}
