package isolate

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aboxhq/abox/internal/termtext"
)

// Steps of [Repo.Finish] that can fail, as [FinishError.Step] names them.
const (
	StepDiscard = "discard" // removing the clone of a run refused before anything started
	StepCollect = "collect" // bringing the branch into the user's repository
	StepDiff    = "diff"    // listing what the branch changes
)

// FinishError is a failed step of [Repo.Finish].
type FinishError struct {
	ID, Step string
	Err      error
}

func (e *FinishError) Error() string {
	switch e.Step {
	case StepDiscard:
		return fmt.Sprintf("removing the clone of refused run %s: %v", e.ID, e.Err)
	case StepCollect:
		return fmt.Sprintf("collecting isolated run %s: %v", e.ID, e.Err)
	}
	return fmt.Sprintf("listing what run %s changed: %v", e.ID, e.Err)
}

func (e *FinishError) Unwrap() error { return e.Err }

// Result is what became of an isolated run's clone once the run's containers are gone.
type Result struct {
	Run       *Run
	Diff      *Diff // once collected
	Discarded bool  // the run was refused before anything started: nothing to review
	Err       error // a *FinishError
}

// Finish collects run's clone once its containers are gone: its branch arrives in the user's
// repository, whatever the run's outcome, Ctrl-C included (ctx's cancellation is ignored: each
// git command has its own deadline). A run refused before anything started leaves nothing to
// review, so its clone is discarded.
func (r *Repo) Finish(ctx context.Context, run *Run, refused bool) *Result {
	ctx = context.WithoutCancel(ctx)
	res := &Result{Run: run}
	fail := func(step string, err error) *Result {
		res.Err = &FinishError{ID: run.ID, Step: step, Err: err}
		return res
	}
	if refused {
		if _, err := r.Discard(ctx, run.ID); err != nil {
			return fail(StepDiscard, err)
		}
		res.Discarded = true
		return res
	}
	if _, err := r.Collect(ctx, run.ID); err != nil {
		return fail(StepCollect, err)
	}
	d, err := r.Diff(ctx, run.ID, false)
	if err != nil {
		return fail(StepDiff, err)
	}
	res.Diff = d
	return res
}

func line(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, termtext.Line(fmt.Sprintf(format, args...)))
}

// WriteStarted writes the line that announces the run's clone.
func (run *Run) WriteStarted(w io.Writer) {
	line(w, "isolated: a private clone of %s on branch %s", ShortID(run.Base), run.Branch)
}

// WriteSummary writes the isolated run's lines of the run's summary. The paths come from the
// agent; every line is made safe to print.
func (res *Result) WriteSummary(w io.Writer) {
	if res == nil || res.Discarded {
		return
	}
	id := res.Run.ID
	if res.Err != nil {
		line(w, "  isolated: branch %s not collected", res.Run.Branch)
		return
	}
	var exec, flagged []string
	for _, f := range res.Diff.Files {
		if f.Exec {
			exec = append(exec, f.Path)
		}
		if f.Flagged() {
			flagged = append(flagged, f.Path)
		}
	}
	s := fmt.Sprintf("  isolated: branch %s · %d file(s) changed", res.Run.Branch, len(res.Diff.Files))
	if len(exec) > 0 {
		s += fmt.Sprintf(" · execution-adjacent: %s", firstOf(exec, 3))
	}
	line(w, "%s", s)
	if len(flagged) > 0 {
		line(w, "  isolated: abox merge refuses without --force: %s", firstOf(flagged, 3))
	}
	for _, b := range res.Diff.LeftOut {
		line(w, "  isolated: left out of the branch: %s (%s)", b.Path, b.what())
	}
	if len(res.Diff.Files) > 0 {
		line(w, "  ↳ review with `abox diff %s`, then `abox merge %s` or `abox discard %s`", id, id, id)
	}
}

// WriteText writes the diff as `abox diff` shows it: a header, one line per file (marked "!"
// when execution-adjacent, "✖" when merge refuses it without force: over the bound, a link
// that does not lead inside the repository, in a git directory, replacing a file of the user's
// that git ignores; a symlink with its target and where it leads), what was left out, the stat
// and, when it was asked for, the patch.
func (d *Diff) WriteText(w io.Writer) {
	line(w, "run %s: branch %s, base %s, %s", d.Run.ID, d.Run.Branch, ShortID(d.Run.Base), d.Run.State)
	for _, f := range d.Files {
		mark, notes := " ", []string{}
		if f.Exec {
			mark = "!"
			notes = append(notes, strings.TrimSuffix("execution-adjacent: "+f.Why, ": "))
		}
		if f.Big {
			mark = "✖"
			notes = append(notes, fmt.Sprintf("%d bytes, over the bound", f.Size))
		}
		if f.Link != "" {
			notes = append(notes, "-> "+f.Link)
		}
		if f.Leads != nil {
			notes = append(notes, f.Leads.String())
		}
		if f.Out {
			mark = "✖"
		}
		if f.Status == "L" {
			notes = append(notes, "unchanged, but the branch changes where it leads")
		}
		if f.GitDir != "" {
			mark = "✖"
			notes = append(notes, "in "+f.GitDir+", a git directory: git there reads its config and runs its hooks")
		}
		if f.Ignored != "" {
			mark = "✖"
			notes = append(notes, f.ignoredNote())
		}
		s := fmt.Sprintf("%s %s %s", mark, f.Status, f.Path)
		if len(notes) > 0 {
			s += "  (" + strings.Join(notes, "; ") + ")"
		}
		line(w, "%s", s)
	}
	for _, b := range d.LeftOut {
		line(w, "left out of the run's last commit: %s (%s)", b.Path, b.what())
	}
	fmt.Fprint(w, termtext.Text(d.Stat))
	if d.Patch != "" {
		fmt.Fprint(w, termtext.Text(d.Patch))
	}
}

// ignoredNote says what of the user's f replaces.
func (f File) ignoredNote() string {
	if strings.HasSuffix(f.Ignored, "/") {
		return "replaces your " + f.Ignored + ", whose files git ignores: merge would delete them"
	}
	return "replaces your " + f.Ignored + ", which git ignores: merge would overwrite it"
}

// what says what a file left out of a branch is: its type, or its size.
func (b Big) what() string {
	if b.Type != "" {
		return "a " + b.Type
	}
	return fmt.Sprintf("%d bytes", b.Size)
}

// firstOf joins up to n of list, saying how many more there are.
func firstOf(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:n], ", "), len(list)-n)
}

// ShortID is the first 12 digits of a commit id.
func ShortID(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
