package doctor

import (
	"context"
	"fmt"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/termtext"
)

// isolatedRuns: the isolated runs waiting for review, with what each would bring that runs code
// outside the sandbox or that merge refuses; and the clones a killed abox left behind — a run
// never collected, a clone with no record. Pending work is a warning, not a failure: nothing of
// it is in the user's working tree until `abox merge`.
func isolatedRuns(ctx context.Context, e *Env) Finding {
	repo := &isolate.Repo{Project: e.Project}
	if e.Manifest != nil && e.Config != nil {
		repo.Watch = render.Watched(e.Config, e.Manifest)
	}
	runs, err := repo.List()
	if err != nil {
		return failf("check the permissions of abox's state directory, or remove the unreadable record", "reading the isolated runs: %v", err)
	}
	orphans, err := repo.Orphans()
	if err != nil {
		return failf("check the permissions of abox's state directory", "reading the clones: %v", err)
	}
	var pending, flagged, uncollected []string
	data := map[string]any{}
	for _, run := range runs {
		if run.State != isolate.Pending {
			continue
		}
		if !run.Collected() {
			uncollected = append(uncollected, run.ID)
			continue
		}
		d, err := repo.Diff(ctx, run.ID, false)
		if err != nil {
			flagged = append(flagged, fmt.Sprintf("%s: %v", run.ID, err))
			continue
		}
		var exec, refused []string
		for _, f := range d.Files {
			if f.Exec {
				exec = append(exec, f.Path)
			}
			if f.Flagged() {
				refused = append(refused, f.Path)
			}
		}
		pending = append(pending, run.ID)
		data[run.ID] = map[string]any{"branch": run.Branch, "files": len(d.Files), "execution_adjacent": exec, "refused_by_merge": refused}
		if len(exec)+len(refused) > 0 {
			flagged = append(flagged, fmt.Sprintf("%s: %s", run.ID, termtext.Line(firstN(append(exec, refused...), 4))))
		}
	}
	f := okf("%d isolated run(s) pending review, none bringing an execution-adjacent file", len(pending))
	switch {
	case len(uncollected)+len(orphans) > 0:
		f = warnf("remove each with `abox discard <run>` (its work never reached your repository)",
			"clones left by an abox that was killed: %s", firstN(append(uncollected, orphans...), 6))
	case len(flagged) > 0:
		f = warnf("review them with `abox diff <run> --patch` before `abox merge <run>`, or `abox discard <run>`",
			"%d pending isolated run(s) bring execution-adjacent or refused files: %s", len(flagged), firstN(flagged, 4))
	case len(runs) == 0:
		f = okf("no isolated run")
	}
	return f.with("pending", data).with("uncollected", uncollected).with("orphans", orphans)
}
