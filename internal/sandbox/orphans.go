package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
)

// Orphan is a run of the project whose containers are running although neither its abox nor
// its warden is alive: killed together, say, by `pkill -9 abox`.
type Orphan struct {
	Run        string   `json:"run"`
	Containers []string `json:"containers"`
}

// Orphans lists the project's orphans among cs, the project's running containers as `docker
// inspect` shows them: an agent or netd of a run whose owner lock nobody holds. The spare netd
// (recorded, or being started) and finished netds on the retire list belong to no run and are
// not orphans.
func Orphans(proj paths.Project, cs []*docker.Container) []Orphan {
	spare := spareNames(proj)
	retired, _ := readRetired(proj)
	var out []Orphan
	at := map[string]int{}
	for _, c := range cs {
		role, id, name := c.Config.Labels["abox.role"], c.Config.Labels["abox.run"], strings.TrimPrefix(c.Name, "/")
		if role != "agent" && role != "netd" || !c.State.Running {
			continue
		}
		switch {
		case validRunID(id) && ownerExists(proj, id):
			if ownerHeld(proj, id) {
				continue
			}
			// a run's, even if the spare record still names it: a run that claimed the
			// spare owns it before the record goes
		case role == "netd" && (slices.Contains(spare, name) || slices.Contains(retired, name)):
			continue
		}
		i, ok := at[id]
		if !ok {
			i, at[id] = len(out), len(out)
			out = append(out, Orphan{Run: id})
		}
		out[i].Containers = append(out[i].Containers, name)
	}
	return out
}

func firstName(c docker.ContainerSummary) string {
	if len(c.Names) > 0 {
		return strings.TrimPrefix(c.Names[0], "/")
	}
	return c.ID
}

// spareNames are the netds of the project's spare machinery: the recorded spare and the one a
// spare-netd process is starting.
func spareNames(proj paths.Project) []string {
	s := &Sandbox{Project: proj}
	var names []string
	if rec, err := s.readSpare(); err == nil {
		names = append(names, rec.Netd)
	}
	if b, err := os.ReadFile(s.startingFile()); err == nil {
		names = append(names, strings.TrimSpace(string(b)))
	}
	return names
}

// Reaped is a run [Reap] finished.
type Reaped struct {
	Run string
	// Outcome is what the run is recorded as; "" when nothing of it had started, and it is not.
	Outcome string
	// Recorded is set when the reap recorded the run (it had not been).
	Recorded bool
	// Isolated is set for a run on a private clone, which the caller collects.
	Isolated bool
}

// Reap finishes the runs of the project whose abox and warden are both gone: each one's owner
// lock, which nobody holds any more, is taken, and the run is torn down and recorded as its
// warden would have ([OutcomeOrphaned]); a run that had not got as far as its warden only has
// its containers removed. A run whose containers could not all be removed keeps its lock, and
// Reap says so: the caller must not start beside it. ctx's cancellation is ignored (a Ctrl-C
// must not leave an orphan half-finished and forgotten). It asks Docker nothing when no run is
// left unheld, as on every ordinary run. `abox run` and `abox shell` reap before their mask
// walk, so that no orphan's agent runs beside a new sandbox of the project.
func Reap(ctx context.Context, d *docker.Client, proj paths.Project) ([]Reaped, error) {
	ctx = context.WithoutCancel(ctx)
	unheld, err := unheldOwners(proj)
	if err != nil {
		return nil, err
	}
	var out []Reaped
	var errs []error
	for id, f := range unheld {
		r, err := reapRun(ctx, d, proj, id)
		if err != nil {
			f.Close() // still named: the next run tries again
			errs = append(errs, err)
			continue
		}
		disown(proj, id, f)
		out = append(out, r)
	}
	if len(errs) > 0 {
		return out, errs[0]
	}
	return out, nil
}

// reapRun finishes run id, whose owner lock the caller holds.
func reapRun(ctx context.Context, d *docker.Client, proj paths.Project, id string) (Reaped, error) {
	if dir, err := runDir(proj, id); err == nil {
		if st, err := loadWard(dir); err == nil {
			recorded := st.Phase == phaseRecorded
			out, err := takeover(ctx, d, st, OutcomeOrphaned, "abox and its warden were both gone; a later abox of the project finished the run", time.Now())
			r := Reaped{Run: id, Outcome: out.Result, Recorded: !recorded && !st.Probe, Isolated: st.Isolated}
			if err != nil {
				return r, fmt.Errorf("run %s, whose abox and warden are gone: %w", id, err)
			}
			return r, nil
		}
	}
	cs, err := d.ContainersByLabel(ctx, map[string]string{"abox.managed": "true", "abox.hash": proj.Hash, "abox.run": id}, true)
	if err != nil {
		return Reaped{}, fmt.Errorf("listing run %s's containers: %w", id, err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, firstName(c))
	}
	rctx, cancel := stepContext(ctx, removeTimeout)
	defer cancel()
	if err := d.Remove(rctx, true, true, names...); err != nil {
		return Reaped{}, fmt.Errorf("removing run %s's containers: %w", id, err)
	}
	(&Sandbox{Project: proj}).forgetSpare(id) // a spare claimed by a run that died at once
	return Reaped{Run: id}, nil
}

// runDir finds the directory of run id (runs/<start>-<id>).
func runDir(proj paths.Project, id string) (string, error) {
	entries, err := os.ReadDir(proj.Runs())
	if err != nil {
		return "", err
	}
	for i := len(entries) - 1; i >= 0; i-- { // the newest first: the one an orphan has
		if e := entries[i]; e.IsDir() && strings.HasSuffix(e.Name(), "-"+id) {
			return filepath.Join(proj.Runs(), e.Name()), nil
		}
	}
	return "", fmt.Errorf("no directory of run %s", id)
}
