package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/termtext"
)

// artifactsMasks: what the next run will mask, found the way `abox run` finds it: the pattern
// matches, content masked before wherever it moved, and every link of a masked file. A walk
// that cannot see the whole workspace refuses the run, and fails here.
func artifactsMasks(_ context.Context, e *Env) Finding {
	rs, err := e.runSpec()
	if err != nil {
		return notRendered(err)
	}
	set, err := e.maskSet(rs.Masks)
	if err != nil {
		hint := "`abox run` refuses until this is fixed"
		var me *sandbox.MaskError
		if errors.As(err, &me) && me.Hint != "" {
			hint = me.Hint + "; `abox run` refuses until then"
		}
		return failf(hint, "the next run is refused: %v", err)
	}
	paths := set.Paths()
	if len(paths) == 0 {
		return okf("nothing in the workspace matches %s", strings.Join(rs.Masks, ", ")).with("masked", paths)
	}
	described := make([]string, len(set.Masks))
	for i, m := range set.Masks {
		described[i] = m.String()
	}
	return okf("%d path(s) masked: %s", len(paths), termtext.Line(firstN(described, 8))).with("masked", paths)
}

// masksIntact: no run left anything in its quarantine — what an agent put in a mask's place,
// which teardown moved out of the workspace — and no masked content sits where no pattern
// masks it (moved, or linked, by the agent or by you).
func masksIntact(_ context.Context, e *Env) Finding {
	qs, err := sandbox.Quarantines(e.Project.Runs())
	if err != nil {
		return failf("check the permissions of abox's state directory, then run `abox doctor` again", "reading the quarantines: %v", err)
	}
	if len(qs) > 0 {
		return quarantined(qs)
	}
	rs, err := e.runSpec()
	if err != nil {
		return notRendered(err)
	}
	set, err := e.maskSet(rs.Masks)
	if err != nil {
		return skipf("see artifacts.masks", "the workspace could not be walked for masks")
	}
	var elsewhere []string
	var first *sandbox.Mask
	for i, m := range set.Masks {
		if m.Reason != sandbox.ByPattern {
			elsewhere = append(elsewhere, m.String())
			if first == nil {
				first = &set.Masks[i]
			}
		}
	}
	if first != nil {
		return warnf(movedHint(*first), "%d path(s) hold masked content away from where it was masked; each stays masked: %s",
			len(elsewhere), termtext.Line(firstN(elsewhere, 6))).with("elsewhere", elsewhere)
	}
	return okf("no run left anything in quarantine; every masked path is where a pattern masks it")
}

// quarantined is the failure for quarantines that still hold what an agent planted.
func quarantined(qs []sandbox.Quarantine) Finding {
	var what, dirs []string
	for _, q := range qs {
		dirs = append(dirs, q.Dir)
		for _, ev := range q.Index.Events {
			if ev.Failed() {
				what = append(what, fmt.Sprintf("run %s: %s", q.Index.Run, ev))
			}
		}
		if len(q.Index.Events) == 0 {
			what = append(what, fmt.Sprintf("%s holds %s", q.Dir, strings.Join(q.Entries, ", ")))
		}
	}
	hint := fmt.Sprintf("an agent put these in place of masked paths: review %s without running anything in it, "+
		"undo what else it changed in the workspace, then remove it (`rm -r %s`)", firstN(dirs, 3), dirs[0])
	return failf(hint, "%s", termtext.Line(firstN(what, 4))).
		with("quarantines", dirs).with("events", what)
}

// movedHint names the command that puts masked content back under its masked path.
func movedHint(m sandbox.Mask) string {
	if m.Reason == sandbox.ByLink {
		return fmt.Sprintf("if you did not link it, remove the link (`rm %s`); it stays masked meanwhile", shq(m.Path))
	}
	return fmt.Sprintf("if you did not move it, move it back (`mv %s %s`); it stays masked where it is meanwhile", shq(m.Path), shq(m.Origin))
}

// shq quotes a workspace name for a command in a hint.
func shq(s string) string { return "'" + strings.ReplaceAll(termtext.Line(s), "'", `'\''`) + "'" }

// maskSet walks the workspace for patterns as the next `abox run` will, with the record of
// masked content; the walk for the runspec's patterns is made once.
func (e *Env) maskSet(patterns []string) (*sandbox.MaskSet, error) {
	walk := func() (*sandbox.MaskSet, error) {
		rec, err := sandbox.LoadMaskRecord(e.Project.MaskRecord())
		if err != nil {
			return nil, err
		}
		return sandbox.FindMasks(e.Project.Workspace, patterns, rec, e.maskWalkLimit())
	}
	if rs, err := e.runSpec(); err == nil && strings.Join(rs.Masks, "\x00") == strings.Join(patterns, "\x00") {
		return e.cache.masks.get(walk)
	}
	return walk()
}

// maskWalkLimit is config.yaml's limits.mask_walk; 0 (the default) when it did not load.
func (e *Env) maskWalkLimit() int {
	if e.Config == nil {
		return 0
	}
	return e.Config.Limits.MaskWalk
}
