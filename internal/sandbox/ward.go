package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/watch"
)

// The outcomes of a run abox did not finish itself.
const (
	// OutcomeKilled: abox ended without finishing the run and printed no crash report (SIGKILL,
	// the OOM killer); its warden finished it.
	OutcomeKilled = "abox-killed"
	// OutcomeCrashed: abox crashed (a panic, a fatal runtime error); its warden finished the run.
	OutcomeCrashed = "abox-crashed"
	// OutcomeOrphaned: abox and its warden were both gone; a later abox of the project found the
	// run still going and finished it ([Reap]).
	OutcomeOrphaned = "orphaned"
)

// wardenGrace is how long after the run's deadline the warden of a live abox waits for abox to
// stop the agent itself before it kills the agent.
const wardenGrace = 10 * time.Second

// wardenTick is how often the warden looks at the clock: a deadline is kept on the wall clock,
// which goes on while the machine is suspended, where a timer would not.
const wardenTick = time.Second

// maxCrashReport bounds what the warden keeps of abox's crash report.
const maxCrashReport = 16 << 10

// WardEnv is what a warden works with.
type WardEnv struct {
	Docker *docker.Client
	RunDir string    // the run's directory, which holds warden.json
	In     io.Reader // abox's end of the pipe
	Ready  io.Writer // where the ready line goes
	Log    io.Writer // a line for everything the warden does
	// Collect collects an isolated run's clone once the warden has finished the run, as abox
	// would have after it ([isolate.Repo.Finish]); nil leaves the clone as it is.
	Collect func(ctx context.Context, proj paths.Project, id string) error
}

// Ward is the warden of the run in env.RunDir ("The warden"). It reads warden.json, prints its
// ready line, and then reads abox's end of the pipe until abox says it is done with the run
// (nil, nil) or the pipe ends without that: abox is gone, and Ward finishes the run and returns
// its outcome. Meanwhile it kills an agent still running [wardenGrace] past the run's deadline.
func Ward(ctx context.Context, env WardEnv) (*Outcome, error) {
	d, runDir, log := env.Docker, env.RunDir, env.Log
	st, err := loadWard(runDir)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(env.Ready, wardenReady)
	lines := make(chan string)
	go readLines(env.In, lines)
	tick := time.NewTicker(wardenTick)
	defer tick.Stop()
	var crash strings.Builder
	killed := false
	for {
		select {
		case line, ok := <-lines:
			switch {
			case !ok:
				out := wardTakeover(ctx, d, st, crash.String(), log)
				if st.Isolated && env.Collect != nil {
					if err := env.Collect(ctx, st.Project, st.ID); err != nil {
						fmt.Fprintf(log, "collecting the run's clone: %v\n", err)
					}
				}
				return out, nil
			case line == msgDone:
				return nil, nil
			case line == msgState:
				if next, err := loadWard(runDir); err == nil {
					st = next
				} else {
					fmt.Fprintf(log, "reading %s again: %v\n", wardenFile, err)
				}
			case crash.Len() < maxCrashReport:
				crash.WriteString(line + "\n")
			}
		case <-tick.C:
			if !killed && overdue(st, time.Now()) {
				killed = killAgent(ctx, d, st.Agent, log)
			}
		}
	}
}

// overdue reports whether the run's agent should have been stopped by now: it runs, and its
// deadline passed [wardenGrace] ago on the wall clock.
func overdue(st *wardenState, now time.Time) bool {
	return st.Phase == phaseAgent && !st.Deadline.IsZero() && !now.Round(0).Before(st.Deadline.Round(0).Add(wardenGrace))
}

// killAgent kills the agent's container; true once it is dead or gone.
func killAgent(ctx context.Context, d *docker.Client, agent string, log io.Writer) bool {
	kctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err := d.Kill(kctx, agent, "KILL")
	if err != nil && !errors.Is(err, docker.ErrNotFound) && !strings.Contains(err.Error(), "is not running") {
		fmt.Fprintf(log, "killing the agent %s past its deadline: %v\n", agent, err)
		return false
	}
	fmt.Fprintf(log, "killed the agent %s: its deadline passed\n", agent)
	return true
}

// readLines sends each line of r, then closes lines at r's end.
func readLines(r io.Reader, lines chan<- string) {
	defer close(lines)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			lines <- strings.TrimSuffix(line, "\n")
		}
		if err != nil {
			return
		}
	}
}

// loadWard reads the run's warden.json.
func loadWard(runDir string) (*wardenState, error) {
	b, err := os.ReadFile(filepath.Join(runDir, wardenFile))
	if err != nil {
		return nil, err
	}
	var st wardenState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", wardenFile, err)
	}
	if !validRunID(st.ID) || st.Dir != runDir {
		return nil, fmt.Errorf("%s names run %q in %q, not this one", wardenFile, st.ID, st.Dir)
	}
	return &st, nil
}

// wardTakeover finishes the run of a warden whose abox is gone, and removes the run's owner
// lock.
func wardTakeover(ctx context.Context, d *docker.Client, st *wardenState, crash string, log io.Writer) *Outcome {
	result, why := OutcomeKilled, "abox ended without finishing the run (killed, or out of memory)"
	if first, _, _ := strings.Cut(strings.TrimSpace(crash), "\n"); first != "" {
		result, why = OutcomeCrashed, "abox crashed ("+first+")"
	}
	fmt.Fprintf(log, "%s; finishing run %s\n", why, st.ID)
	out := takeover(ctx, d, st, result, why+"; its warden finished the run")
	os.Remove(ownerPath(st.Project, st.ID))
	fmt.Fprintf(log, "run %s finished: %s\n", st.ID, out.Result)
	return out
}

// takeover finishes a run whose abox is gone, from what warden.json says of it: the agent is
// killed first, then the run is torn down and recorded as abox's own teardown would (never
// twice: a run abox recorded only has its containers removed). result is the outcome of a run
// abox had not begun to tear down; why becomes a note.
func takeover(ctx context.Context, d *docker.Client, st *wardenState, result, why string) *Outcome {
	s := &Sandbox{Docker: d, Project: st.Project, Spec: &render.RunSpec{Project: st.ProjectName}, Now: time.Now}
	o := Options{Keep: st.Keep, Shell: st.Shell, Isolated: st.Isolated, Branch: st.Branch, Record: st.Record, promptSHA: st.PromptSHA}
	out := &Outcome{ID: st.ID, Dir: st.Dir, Netd: st.Netd, Agent: st.Agent, Started: st.Started, Spare: st.Spare,
		Transcript: st.Transcript, Result: result, counterBase: st.CounterBase, exitToRead: st.Phase != phaseStarted}
	if st.Phase == phaseRecorded {
		out.Result = st.Result
		s.removeRun(ctx, o, out)
		return out
	}
	if st.Phase == phaseAgent {
		killAgent(ctx, d, st.Agent, io.Discard)
	}
	if st.Phase == phaseTeardown {
		out.Result, out.ExitCode, out.Notes = st.Result, st.ExitCode, st.Notes
		why = strings.Replace(why, "finished the run", "finished its teardown", 1)
	}
	out.note("%s", why)
	if m := st.Masks; m != nil {
		out.masks = &maskRun{set: &MaskSet{Masks: m.Masks, Absent: m.Absent, rootDev: m.RootDev}, patterns: m.Patterns, limit: m.Limit}
	}
	var before *watch.Snapshot
	if w := st.Watch; w != nil {
		scope := WatchScope(w.Workspace, w.Home, w.Patterns, w.MaskPatterns)
		o.Watch = &scope
		before = loadBefore(st.Dir)
	}
	c := &clock{now: s.Now, last: s.Now(), out: out}
	s.teardown(ctx, o, out, c)
	s.compareAfter(o, out, before, c)
	out.Duration = s.Now().Sub(out.Started)
	if !st.Probe {
		if err := s.Record(o, out); err != nil {
			out.note("recording the run: %v", err)
		}
	}
	return out
}

// loadBefore reads the run's first snapshot; nil when it cannot, which the comparison then
// skips.
func loadBefore(dir string) *watch.Snapshot {
	b, err := os.ReadFile(filepath.Join(dir, beforeFile))
	if err != nil {
		return nil
	}
	var snap watch.Snapshot
	if json.Unmarshal(b, &snap) != nil {
		return nil
	}
	return &snap
}

// removeRun removes what is left of a recorded run, its agent and its netd; with --keep it only
// makes sure that its agent no longer runs.
func (s *Sandbox) removeRun(ctx context.Context, o Options, out *Outcome) {
	if o.Keep {
		killAgent(ctx, s.Docker, out.Agent, io.Discard)
		return
	}
	rctx, cancel := stepContext(ctx, removeTimeout)
	defer cancel()
	if err := s.Docker.Remove(rctx, true, true, out.Agent, out.Netd); err != nil {
		out.note("removing the run's containers: %v", err)
	}
}
