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
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
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
// lock once nothing of the run is left; a run it could not clear keeps its lock file, for the
// project's next run to finish ([Reap]).
func wardTakeover(ctx context.Context, d *docker.Client, st *wardenState, crash string, log io.Writer) *Outcome {
	result, why := OutcomeKilled, "abox ended without finishing the run (killed, or out of memory)"
	if first, _, _ := strings.Cut(strings.TrimSpace(crash), "\n"); first != "" {
		result, why = OutcomeCrashed, "abox crashed ("+first+")"
	}
	fmt.Fprintf(log, "%s; finishing run %s\n", why, st.ID)
	out, err := takeover(ctx, d, st, result, why+"; its warden finished the run", time.Now())
	if err != nil {
		fmt.Fprintf(log, "run %s: %v; its owner lock stays for the project's next run\n", st.ID, err)
		return out
	}
	os.Remove(ownerPath(st.Project, st.ID))
	fmt.Fprintf(log, "run %s finished: %s\n", st.ID, out.Result)
	return out
}

// takeoverPatience bounds how long a takeover keeps trying to stop the agent and to clear the
// run's containers while the daemon does not answer, from when the takeover starts.
const takeoverPatience = 5 * time.Minute

// takeover finishes a run whose abox is gone, from what warden.json says of it: the agent is
// killed first (tried again while the daemon does not answer), then the run is torn down and
// recorded as abox's own teardown would, and last every container of the run still there is
// removed ([Sandbox.sweep]). A run abox recorded is not recorded again, and only swept. result
// is the outcome of a run abox had not begun to tear down; why becomes a note. The error says
// what is left: the caller keeps the run's owner lock then. ctx's cancellation is ignored, as
// by abox's own teardown; its patience ([takeoverPatience]) runs from began.
func takeover(ctx context.Context, d *docker.Client, st *wardenState, result, why string, began time.Time) (*Outcome, error) {
	ctx = context.WithoutCancel(ctx)
	s := &Sandbox{Docker: d, Project: st.Project, Spec: &render.RunSpec{Project: st.ProjectName}, Now: time.Now}
	o := Options{Keep: st.Keep, Shell: st.Shell, Isolated: st.Isolated, Branch: st.Branch, Record: st.Record, promptSHA: st.PromptSHA}
	out := &Outcome{ID: st.ID, Dir: st.Dir, Netd: st.Netd, Agent: st.Agent, Started: st.Started, Spare: st.Spare,
		Transcript: st.Transcript, Result: result, counterBase: st.CounterBase, exitToRead: st.Phase != phaseStarted}
	// abox may have had a create of the run's netd or agent on its way when it died: a docker
	// CLI of its own, which goes on without it.
	inFlight := st.Phase == phaseStarted
	if st.Phase == phaseRecorded {
		out.Result = st.Result
		return out, s.sweep(ctx, out, o.Keep, began, inFlight)
	}
	if st.Phase == phaseAgent {
		stopAgent(ctx, d, st.Agent, began)
	}
	if st.Phase == phaseTeardown {
		out.Result, out.ExitCode, out.Notes = st.Result, st.ExitCode, st.Notes
		why = strings.Replace(why, "finished the run", "finished its teardown", 1)
	}
	out.note("%s", why)
	replayTranscript(out)
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
		if err := s.record(o, out); err != nil {
			out.note("recording the run: %v", err)
		} else { // a later reap of this run only sweeps it
			st.Phase, st.Result = phaseRecorded, out.Result
			saveState(st)
		}
	}
	return out, s.sweep(ctx, out, o.Keep, began, inFlight)
}

// stopAgent kills the agent, trying again while the daemon does not answer, until it is dead or
// gone or [takeoverPatience] has passed since began.
func stopAgent(ctx context.Context, d *docker.Client, agent string, began time.Time) {
	for wait := time.Second; !killAgent(ctx, d, agent, io.Discard) && time.Since(began) < takeoverPatience; wait = min(2*wait, 10*time.Second) {
		time.Sleep(wait)
	}
}

// replayTranscript reads what the agent printed, as far as abox wrote it to the transcript
// before it died, into the run's summary: its session and tool calls are the record's.
func replayTranscript(out *Outcome) {
	f, err := os.Open(out.Transcript)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxReplay))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		out.Summary.Observe(sc.Bytes())
	}
}

// maxReplay bounds how much of the transcript a takeover reads back.
const maxReplay = 1 << 30

// saveState writes warden.json again, from a warden or a reap.
func saveState(st *wardenState) {
	if b, err := json.MarshalIndent(st, "", "  "); err == nil {
		statefs.WriteFile(filepath.Join(st.Dir, wardenFile), b, statefs.PrivateMode)
	}
}

// sweepTick is how often a sweep looks again.
const sweepTick = time.Second

// sweep removes every container of the run that is still there (with --keep: kills every one
// still running), and looks again until none is. With inFlight it also waits for the docker
// commands abox left creating the run's netd or agent: while one runs (Linux shows them in
// /proc; elsewhere, for [creationTimeout] from began) what it makes is removed in turn. It gives
// up [takeoverPatience] after began (or once the in-flight window has passed, if later), and
// says what is left.
func (s *Sandbox) sweep(ctx context.Context, out *Outcome, keep bool, began time.Time, inFlight bool) error {
	labels := map[string]string{"abox.managed": "true", "abox.hash": s.Project.Hash, "abox.run": out.ID}
	names := []string{out.Netd, out.Agent}
	limit := began.Add(max(takeoverPatience, creationWindow))
	for {
		left, err := s.sweepOnce(ctx, labels, keep)
		if err == nil && len(left) == 0 && !(inFlight && creating(names, began)) {
			return nil
		}
		if time.Now().After(limit) {
			if err == nil {
				err = fmt.Errorf("%s still there", strings.Join(left, ", "))
			}
			out.note("the run's containers could not all be removed: %v", err)
			return fmt.Errorf("clearing the run's containers: %w", err)
		}
		time.Sleep(sweepTick)
	}
}

// sweepOnce removes (or, with keep, kills) the run's containers it finds, and returns those it
// found.
func (s *Sandbox) sweepOnce(ctx context.Context, labels map[string]string, keep bool) ([]string, error) {
	cs, err := s.Docker.ContainersByLabel(ctx, labels, !keep)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	var found []string
	for _, c := range cs {
		found = append(found, firstName(c))
	}
	rctx, cancel := stepContext(ctx, removeTimeout)
	defer cancel()
	if keep {
		for _, name := range found {
			if err := s.Docker.Kill(rctx, name, "KILL"); err != nil && !errors.Is(err, docker.ErrNotFound) {
				return found, err
			}
		}
		return found, nil
	}
	return found, s.Docker.Remove(rctx, true, true, found...)
}

// creationWindow is how long a create abox had on its way may still land: the docker client's
// bound on a create that no longer follows its caller.
const creationWindow = 2*time.Minute + 10*time.Second

// creating reports whether a docker command that creates one of the containers named may still
// be running: a process whose arguments hold one of the names, as Linux's /proc shows them;
// without /proc, until [creationWindow] has passed since began.
func creating(names []string, began time.Time) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return time.Since(began) < creationWindow
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		for i, a := range args {
			if a == "--name" && i+1 < len(args) && slices.Contains(names, args[i+1]) {
				return true
			}
		}
	}
	return false
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
