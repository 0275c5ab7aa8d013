package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/watch"
)

// The warden
//
// Every run has a warden: a process of its own (`abox warden`, [ProcessWarden]) started before
// the run's netd, in a session of its own, with no terminal, ignoring every signal a terminal or
// a process group can send. It does nothing while abox lives. abox holds the one write end of
// a pipe that is the warden's standard input, and the Go runtime also writes abox's crash report
// there (runtime/debug.SetCrashOutput). When abox ends without telling the warden it is done —
// killed (SIGKILL, the OOM killer), crashed, or anything else — the kernel closes that pipe and
// the warden finishes the run itself ([Ward]): it kills the agent, finishes netd, harvests its
// logs, checks the masks, compares the watched files and records the run, as abox's teardown
// would, with the outcome abox-killed or abox-crashed. It also enforces the run's deadline
// while abox lives but does not act (stopped, or the machine suspended): the agent is killed
// [wardenGrace] after run.timeout. What it needs is in the run's directory (warden.json), which
// abox writes before each step the warden must know of.
//
// The warden inherits the run's owner lock and, for a live run, the project's live.lock, so
// both stay held until the run is finished with, whoever finishes it: the next sandbox of the
// project cannot start beside a run whose abox just died.

// wardenFile, in a run's directory, is what the run's warden — or, if the warden is gone too,
// the next abox of the project ([Reap]) — needs to finish the run without the abox that
// started it.
const wardenFile = "warden.json"

// beforeFile, beside it, is the run's first snapshot of the watched files.
const beforeFile = "watch-before.json"

// The phases of a run, as its warden knows them.
const (
	phaseStarted  = "started"  // containers may exist; the agent has not started
	phaseAgent    = "agent"    // the agent is started or starting
	phaseTeardown = "teardown" // abox is tearing the run down
	phaseRecorded = "recorded" // the run is recorded; its containers may still be going
)

// wardenState is warden.json.
type wardenState struct {
	Phase       string        `json:"phase"`
	Project     paths.Project `json:"project"`
	ProjectName string        `json:"project_name"`
	ID          string        `json:"id"`
	Dir         string        `json:"dir"`
	Netd        string        `json:"netd"`
	Agent       string        `json:"agent"`
	Started     time.Time     `json:"started"`
	Spare       time.Time     `json:"spare,omitzero"`
	Transcript  string        `json:"transcript,omitempty"`
	Keep        bool          `json:"keep,omitempty"`
	Shell       bool          `json:"shell,omitempty"`
	Isolated    bool          `json:"isolated,omitempty"`
	Branch      string        `json:"branch,omitempty"`
	PromptSHA   string        `json:"prompt_sha"`
	Record      RecordInfo    `json:"record"`
	// Probe is a sandbox of `abox doctor --probe`: torn down, never recorded.
	Probe bool `json:"probe,omitempty"`
	// Deadline is when the agent must be stopped (wall clock); zero without a timeout.
	Deadline    time.Time        `json:"deadline,omitzero"`
	CounterBase *policy.Counters `json:"counter_base,omitempty"`
	Masks       *maskState       `json:"masks,omitempty"`
	Watch       *watchState      `json:"watch,omitempty"`
	// What abox knew of the run when it began its teardown.
	Result   string   `json:"result,omitempty"`
	ExitCode int      `json:"exit_code,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// maskState is what [Sandbox.checkMasks] needs of the masks the run started with.
type maskState struct {
	Masks    []Mask   `json:"masks"`
	Absent   []string `json:"absent,omitempty"`
	RootDev  uint64   `json:"root_dev"`
	Patterns []string `json:"patterns"`
	Limit    int      `json:"limit"`
}

// watchState is the scope of the run's snapshots; the masks are expanded again when it is used.
type watchState struct {
	Workspace    string   `json:"workspace"`
	Home         string   `json:"home"`
	Patterns     []string `json:"patterns"`
	MaskPatterns []string `json:"mask_patterns"`
}

// RecordInfo is what a run's record says of the project besides the run itself.
type RecordInfo struct {
	Profile        string   `json:"profile"`
	PermissionMode string   `json:"permission_mode"`
	Servers        []string `json:"servers"`
}

// WardenFunc starts the warden of the run whose directory is runDir, handing it held: the run's
// locks, which it keeps for as long as it lives. warden.json is written before it is called.
type WardenFunc func(runDir string, held []*os.File) (*Warden, error)

// Warden is abox's end of its run's warden.
type Warden struct {
	mu     sync.Mutex
	w      io.WriteCloser // the warden's standard input
	exited <-chan struct{}
	crash  bool // abox's crash report goes to w
}

// NewWarden is abox's end of a warden that reads w and ends when exited is closed: for a
// [WardenFunc] of another kind than [ProcessWarden].
func NewWarden(w io.WriteCloser, exited <-chan struct{}) *Warden {
	return &Warden{w: w, exited: exited}
}

// tell sends the warden one line. A warden that is gone is noted by the caller through [Warden.gone].
func (w *Warden) tell(line string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.w != nil {
		io.WriteString(w.w, line+"\n")
	}
}

// gone reports whether the warden has ended.
func (w *Warden) gone() bool {
	if w == nil {
		return false
	}
	select {
	case <-w.exited:
		return true
	default:
		return false
	}
}

// done tells the warden that the run is finished with, and lets it go.
func (w *Warden) done() {
	if w == nil {
		return
	}
	w.tell(msgDone)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.crash {
		debug.SetCrashOutput(nil, debug.CrashOptions{})
	}
	if w.w != nil {
		w.w.Close()
		w.w = nil
	}
}

// The lines abox sends its warden; anything else it reads is abox's crash report.
const (
	msgState = "abox-warden: state" // warden.json changed
	msgDone  = "abox-warden: done"  // the run is finished with
)

// wardenReadyTimeout bounds a warden's start, from the moment it is started.
const wardenReadyTimeout = 20 * time.Second

// wardenReady is the line a warden prints once it has read warden.json and holds the run.
const wardenReady = "ready"

// ProcessWarden starts `exe warden --run-dir DIR` ([Ward]): in a session of its own, its
// standard input a pipe whose only write end is abox's, its standard output the line saying it
// is ready, its standard error warden.log in the run's directory. abox's crash report goes to
// the pipe too.
func ProcessWarden(exe string) WardenFunc {
	return func(runDir string, held []*os.File) (*Warden, error) {
		if exe == "" {
			return nil, errors.New("the abox binary's path is unknown")
		}
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer inR.Close()
		outR, outW, err := os.Pipe()
		if err != nil {
			inW.Close()
			return nil, err
		}
		log, err := os.OpenFile(filepath.Join(runDir, "warden.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, statefs.PrivateMode)
		if err != nil {
			inW.Close()
			outR.Close()
			outW.Close()
			return nil, err
		}
		defer log.Close()
		cmd := exec.Command(exe, "warden", "--run-dir", runDir, "--held", strconv.Itoa(len(held)))
		cmd.Dir = runDir // never the workspace, which the agent writes
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, log
		cmd.ExtraFiles = held
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
		outW.Close()
		if err != nil {
			inW.Close()
			outR.Close()
			return nil, err
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if err := awaitReady(outR, exited); err != nil {
			cmd.Process.Kill()
			inW.Close()
			return nil, err
		}
		w := &Warden{w: inW, exited: exited}
		if debug.SetCrashOutput(inW, debug.CrashOptions{}) == nil {
			w.crash = true
		}
		return w, nil
	}
}

// awaitReady reads the warden's ready line, within [wardenReadyTimeout] of now, and then drains
// its standard output in the background.
func awaitReady(r *os.File, exited <-chan struct{}) error {
	got := make(chan error, 1)
	go func() {
		defer r.Close()
		line, err := bufio.NewReader(r).ReadString('\n')
		switch {
		case line == wardenReady+"\n":
			got <- nil
			io.Copy(io.Discard, r)
		case err != nil:
			got <- errors.New("it ended before it was ready (see warden.log in the run's directory)")
		default:
			got <- fmt.Errorf("it said %q instead of %q", line, wardenReady)
		}
	}()
	select {
	case err := <-got:
		return err
	case <-time.After(wardenReadyTimeout):
		return fmt.Errorf("it was not ready within %s", wardenReadyTimeout)
	}
}

// ErrNoWarden refuses a run that has no warden: nothing would end it if abox died.
var ErrNoWarden = errors.New("the run has no warden to end it if abox dies")

// startWarden writes warden.json and starts the run's warden, handing it the run's owner lock
// and, for a live run, the project's live.lock. A run whose warden does not start is refused.
func (s *Sandbox) startWarden(o Options, out *Outcome, before *watch.Snapshot) error {
	if s.Warden == nil {
		return fmt.Errorf("%w: %w", ErrBoundary, ErrNoWarden)
	}
	if before != nil {
		b, err := json.Marshal(before)
		if err == nil {
			err = statefs.WriteFile(filepath.Join(out.Dir, beforeFile), b, statefs.PrivateMode)
		}
		if err != nil {
			return fmt.Errorf("%w: writing the run's first snapshot for its warden: %v", ErrBoundary, err)
		}
	}
	out.ward = s.wardenState(o, out)
	if err := s.saveWard(out); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrBoundary, wardenFile, err)
	}
	held := []*os.File{out.owner}
	if mr := out.masks; mr != nil && mr.live != nil {
		held = append(held, mr.live.live, mr.live.masks)
	}
	w, err := s.Warden(out.Dir, held)
	if err != nil {
		return fmt.Errorf("%w: the run's warden did not start: %v", ErrBoundary, err)
	}
	out.warden = w
	return nil
}

// wardenState is what the warden needs of the run, as it starts.
func (s *Sandbox) wardenState(o Options, out *Outcome) *wardenState {
	st := &wardenState{
		Phase: phaseStarted, Project: s.Project, ProjectName: s.Spec.Project,
		ID: out.ID, Dir: out.Dir, Netd: out.Netd, Agent: out.Agent, Started: out.Started, Spare: out.Spare,
		Keep: o.Keep, Shell: o.Shell, Isolated: o.Isolated, Branch: o.Branch, PromptSHA: promptSHA(o.Prompt),
		Record: o.Record, Probe: len(o.Command) > 0,
	}
	if mr := out.masks; mr != nil {
		st.Masks = &maskState{Masks: mr.set.Masks, Absent: mr.set.Absent, RootDev: mr.set.rootDev, Patterns: mr.patterns, Limit: mr.limit}
	}
	if o.Watch != nil {
		st.Watch = &watchState{Workspace: o.Watch.Workspace, Home: o.Watch.Home, Patterns: o.Watch.Patterns, MaskPatterns: o.Masks}
	}
	return st
}

// saveWard writes warden.json and tells the warden to read it again.
func (s *Sandbox) saveWard(out *Outcome) error {
	if out.ward == nil {
		return nil
	}
	b, err := json.MarshalIndent(out.ward, "", "  ")
	if err != nil {
		return err
	}
	if err := statefs.WriteFile(filepath.Join(out.Dir, wardenFile), b, statefs.PrivateMode); err != nil {
		return err
	}
	out.warden.tell(msgState)
	return nil
}

// ward records the run's phase for its warden. A failure to write it becomes a note: the
// warden still holds the run, and finishes it from what it last read.
func (s *Sandbox) ward(out *Outcome, phase string) {
	if out.ward == nil {
		return
	}
	out.ward.Phase = phase
	out.ward.CounterBase = out.counterBase
	if phase == phaseTeardown {
		out.ward.Result, out.ward.ExitCode, out.ward.Notes = out.Result, out.ExitCode, out.Notes
	}
	if err := s.saveWard(out); err != nil {
		out.note("telling the run's warden it is at %s: %v", phase, err)
	}
}

// Done is the end of a run returned by [Sandbox.Run], once the caller has recorded it and is
// finished with it: its warden lets it go, and its owner lock is removed. Until then, abox's
// death is the warden's cue.
func (s *Sandbox) Done(out *Outcome) {
	if out == nil {
		return
	}
	out.warden.done()
	out.warden = nil
	disown(s.Project, out.ID, out.owner)
	out.owner = nil
}
