package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/telemetry"
	"github.com/aboxhq/abox/internal/watch"
)

// Sandbox holds what a run needs from the host.
type Sandbox struct {
	Docker   *docker.Client
	Project  paths.Project
	Spec     *render.RunSpec
	Baseline []byte // the expected `nft -j list ruleset` of the netd image
	Now      func() time.Time
	Progress io.Writer // one-line progress messages (stderr)
	// Warden starts the run's warden ("The warden"): [ProcessWarden] of the abox binary. A
	// sandbox without one is refused before its netd starts.
	Warden WardenFunc
}

// Options are one run's choices.
type Options struct {
	Prompt   string
	Resume   string
	Continue bool
	Keep     bool
	Shell    bool          // interactive /bin/bash with a TTY instead of claude -p
	Timeout  time.Duration // 0: no timeout
	Output   io.Writer     // where stream-json lines or pretty events go; nil: quiet
	Pretty   bool          // print events for a person rather than raw stream-json
	Masks    []string      // mask patterns, expanded against the workspace now
	// MaskWalkLimit bounds the workspace entries the mask walk visits; 0 is [MaxMaskWalk].
	MaskWalkLimit int
	// SecretEnv holds the attached secrets as env-file lines (VAR=value). They reach the agent's
	// `docker create` on its stdin, read with --env-file /dev/stdin: in no argv, in no file.
	SecretEnv []byte
	// Command, when set, replaces the agent's command (claude and its per-run arguments) with
	// this argv, run as the runspec's agent user. Only `abox doctor --probe` sets it, to run its
	// escape probes in a sandbox identical to a real run's; Prompt, Resume, Continue and Shell
	// are then ignored.
	Command []string
	// ReadyTimeout bounds netd's start-up and self-test.
	ReadyTimeout time.Duration
	// Gateway is the MCP gateway container's address on the sandbox's network, as the daemon
	// reported it before the run ([gateway.Address]); zero when the project has no MCP servers.
	// It completes netd's argv ([policy.GatewayAddrFlag]): netd dials it and nothing else.
	Gateway netip.AddrPort
	// ID, when set, is the run's id (an isolated run's clone is made under it before the run);
	// a new one otherwise.
	ID string
	// Isolated runs the agent on the run's private clone ([paths.Project.Clone] of ID, which
	// must exist) instead of the workspace: the agent's first --mount becomes the runspec's
	// isolated one, and nothing of the workspace is walked, masked or locked (the agent cannot
	// reach it).
	Isolated bool
	// Branch is an isolated run's branch, for its record.
	Branch string
	// SpareNetd lets the run take the project's spare netd, if one fits ([Sandbox.claimSpare]):
	// config.yaml's defaults.spare_netd. Off, a spare an earlier run left is not used.
	SpareNetd bool
	// Ahead is what was asked of the project's spare before the preflight ([LookAhead]); a
	// claim of that same spare takes it instead of asking again. nil: nothing was.
	Ahead *SpareAhead
	// NetdImageID is the ID of the netd image the preflight checked ([Ready.NetdImageID]); a
	// spare must run it. "": the claim inspects the image itself.
	NetdImageID string
	// Retire leaves the removal of the run's finished netd to the after-run process the caller
	// starts once the run has returned ([SpawnAfterRun]): the run puts it on the project's retire
	// list instead of waiting for Docker to tear it down. Off, the teardown removes it.
	Retire bool
	// Watch, when set, is what the run snapshots ([WatchScope]) before netd starts and again
	// after teardown; [Outcome.Exec] is the difference.
	Watch *watch.Scope
	// Record is what the run's record says of the project ([Sandbox.Record]).
	Record RecordInfo

	promptSHA string // the prompt's digest, for a run finished by its warden (Prompt is not kept)
}

// ErrBoundary marks a run refused because the sandbox could not be verified. No agent started.
var ErrBoundary = errors.New("sandbox not verified")

// ErrInterrupted marks a run stopped by the caller (Ctrl-C, SIGTERM) before its agent started.
// It is not a refusal: the sandbox may well have been sound.
var ErrInterrupted = errors.New("interrupted before the agent started")

// Outcome is what happened in a run.
type Outcome struct {
	ID, Dir, Transcript string
	Netd, Agent         string // container names
	Started             time.Time
	Duration            time.Duration
	ExitCode            int
	Result              string // exited, timeout, interrupted, netd-died, refused, failed
	Summary             telemetry.Summary
	Harvest             *telemetry.Harvest
	Notes               []string
	Phases              []Phase
	Argv                [][]string            // the docker argv run for netd and the agent
	MaskEvents          []telemetry.MaskEvent // masks that did not hold at teardown (see "Masks")
	Exec                *ExecReport           // what the run changed that runs outside the sandbox; nil if not watched
	Spare               time.Time             // when the run's netd was started ahead, as a spare; zero if the run started it

	firstOutput time.Time // when the agent's first line of output arrived
	exitToRead  bool      // the agent ran: the teardown reads its exit code before removing it
	masks       *maskRun  // what was masked at start; nil when nothing was started
	// counterBase, for a run on a spare, is its counters at the policy verify: what the spare
	// counted before (packets sent to it while it waited) is not the run's ([Sandbox.harvest]).
	counterBase *policy.Counters
	// readBack, for a run on a spare, is the spare's ruleset as [LookAhead] read it back: the
	// policy verify compares it instead of reading again.
	readBack []byte
	// owner is the run's owner lock, held until [Sandbox.Done]; warden and ward its warden and
	// what it was last told ("The warden").
	owner  *os.File
	warden *Warden
	ward   *wardenState
}

// Phase is one timed step of a run. A run's phases are consecutive and, in order: prepare (the
// argv, with the workspace walked for masks, and the agent's runtime checked), netd start (`docker run` of netd),
// netd ready (netd loads the ruleset and self-tests), runtime canary (only for an agent under a
// runtime other than runc: see runtime.go), policy verify (the ruleset read back), agent create
// (what is left of the agent's `docker create`, which runs from netd start to here),
// agent start (until the agent's first output), agent run (until it exits), agent exit (why it
// ended; killed if it did not end by itself), netd finish (netd stops serving and writes its
// counters, while the agent's exit code is read and the agent removed; netd stop instead when
// netd is stopped: see [Sandbox.teardown]), harvest (netd's logs copied out), teardown (netd
// removed or retired) and, for a watched run, exec diff (the workspace snapshotted again and
// compared). A run refused early has the first few, then the teardown's.
type Phase struct {
	Name string        `json:"name"`
	Dur  time.Duration `json:"dur_ns"`
}

func (o *Outcome) note(format string, args ...any) {
	o.Notes = append(o.Notes, fmt.Sprintf(format, args...))
}

// NewRunID returns 8 random hex digits.
func NewRunID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Run starts, verifies, runs and tears down one sandbox. The outcome is returned even with an
// error, so the caller can always print and record it; the caller then lets the run go with
// [Sandbox.Done].
func (s *Sandbox) Run(ctx context.Context, o Options) (*Outcome, error) {
	out := &Outcome{ID: o.ID, Started: s.Now(), Result: "failed"}
	spared := o.SpareNetd && s.claimSpare(ctx, o, out)
	if out.ID == "" {
		out.ID = NewRunID()
	}
	out.Netd = replaceRun(s.Spec.Netd.Args, out.ID)[indexAfter(s.Spec.Netd.Args, "--name")]
	out.Agent = replaceRun(s.Spec.Agent.Args, out.ID)[indexAfter(s.Spec.Agent.Args, "--name")]
	if out.owner == nil { // a claimed spare's run is owned already
		if err := s.own(out); err != nil {
			s.dropClaimed(ctx, spared, out) // no record names it any more: nothing else would remove it
			return out, err
		}
	}
	c := &clock{now: s.Now, last: out.Started, out: out}
	refused := func(err error) (*Outcome, error) { // before anything of the run started
		s.dropClaimed(ctx, spared, out)
		out.Result = "refused"
		if ctx.Err() != nil {
			out.Result, err = endedAs(ctx), ErrInterrupted
		}
		c.mark("prepare")
		out.Duration = s.Now().Sub(out.Started)
		return out, err
	}
	if err := s.prepareWorkspace(o, out); err != nil {
		return refused(err)
	}
	defer out.masks.release()
	runtime, err := s.checkRuntime(ctx)
	if err != nil {
		return refused(err)
	}
	before := snapshotBefore(o)
	if err := s.startWarden(o, out, before); err != nil {
		return refused(err)
	}
	err = s.run(ctx, o, out, c, runtime, spared)
	if err != nil && ctx.Err() != nil && out.Result == "refused" {
		// The start was cut short by the caller, not refused by a check.
		out.Result = endedAs(ctx)
		out.note("%s before the agent started; the sandbox was torn down", endedWhy(ctx))
		err = ErrInterrupted
	}
	s.ward(out, phaseTeardown)
	// Teardown must finish even when ctx is cancelled by Ctrl-C or the timeout: it keeps ctx's
	// values only, and each of its steps gets its own deadline when it starts.
	s.teardown(context.WithoutCancel(ctx), o, out, c)
	s.compareAfter(o, out, before, c)
	out.Duration = s.Now().Sub(out.Started)
	if out.warden.gone() {
		out.note("the run's warden ended before the run did (see warden.log in the run's directory)")
	}
	return out, err
}

func (s *Sandbox) run(ctx context.Context, o Options, out *Outcome, c *clock, runtime string, spared bool) error {
	created, err := s.startNetd(ctx, o, out, c, spared)
	if err != nil {
		out.Result = "refused"
		return err
	}
	err = s.verify(ctx, o, out, c, runtime)
	// The agent's create runs to its end once started; the teardown must find what it made.
	if cerr := <-created; err == nil && cerr != nil {
		err = fmt.Errorf("%w: creating the agent container: %v", ErrBoundary, cerr)
	}
	if err != nil {
		out.Result = "refused"
		return err
	}
	c.mark("agent create")
	return s.runAgent(ctx, o, out, c)
}

// clock cuts a run into consecutive phases, recorded in phases.json: each mark closes the phase
// that began at the previous one, so the phases add up to the run's duration.
type clock struct {
	now  func() time.Time
	last time.Time
	out  *Outcome
}

// mark closes the current phase now.
func (c *clock) mark(name string) { c.markAt(name, c.now()) }

// markAt closes the current phase at t, a moment seen earlier (never before the last mark).
func (c *clock) markAt(name string, t time.Time) {
	t = maxTime(t, c.last)
	c.out.Phases = append(c.out.Phases, Phase{Name: name, Dur: t.Sub(c.last)})
	c.last = t
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// startNetd runs netd, then starts the agent's create in the background: it needs netd's
// container (its network is netd's) but nothing of netd's start-up, so it overlaps netd ready and
// policy verify. The error of the create arrives on the channel once it ended; the agent is only
// created, and starts only once netd is verified ([Sandbox.run]).
func (s *Sandbox) startNetd(ctx context.Context, o Options, out *Outcome, c *clock, spared bool) (<-chan error, error) {
	netdArgv := s.netdArgv(o, out)
	agentArgv, err := s.agentArgv(o, out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBoundary, err)
	}
	out.Argv = [][]string{netdArgv, agentArgv}
	writeJSON(filepath.Join(out.Dir, "argv.json"), out.Argv)
	c.mark("prepare")
	if !spared { // a spare is this very argv, started ahead ([Sandbox.claimSpare])
		if _, err := s.Docker.RunDetached(ctx, netdArgv); err != nil {
			return nil, fmt.Errorf("%w: starting netd: %v", ErrBoundary, err)
		}
	}
	c.mark("netd start")
	created := make(chan error, 1)
	go func() { created <- s.createAgent(ctx, agentArgv, o.SecretEnv) }()
	return created, nil
}

// createAgent runs the agent's `docker create`, with the attached secrets, if any, on the CLI's
// stdin for its --env-file /dev/stdin. Docker keeps them in the container's configuration,
// where `docker inspect` shows them; abox writes them nowhere.
func (s *Sandbox) createAgent(ctx context.Context, argv []string, env []byte) error {
	var stdin io.Reader
	if len(env) > 0 {
		stdin = bytes.NewReader(env)
	}
	_, err := s.Docker.CreateWithInput(ctx, argv, stdin)
	return err
}

// netdArgv completes the runspec's netd argv for this run: the gateway's address, if any, after
// netd's command.
func (s *Sandbox) netdArgv(o Options, out *Outcome) []string {
	argv := replaceRun(s.Spec.Netd.Argv(), out.ID)
	if o.Gateway.IsValid() {
		argv = append(argv, policy.GatewayAddrFlag, o.Gateway.String())
	}
	return argv
}

// agentArgv completes the runspec's agent argv for this run: the isolated workspace or the
// masks, then the image, then the command and the per-run arguments.
func (s *Sandbox) agentArgv(o Options, out *Outcome) ([]string, error) {
	argv := replaceRun(s.Spec.Agent.Args, out.ID)
	if o.Isolated {
		var err error
		if argv, err = s.isolate(argv, out.ID); err != nil {
			return nil, err
		}
	}
	for _, m := range out.masks.mounts(filepath.Join(s.Project.Masks(), "empty"), filepath.Join(s.Project.Masks(), "empty.d")) {
		argv = append(argv, "--mount", m.Arg())
	}
	if len(o.SecretEnv) > 0 {
		argv = append(argv, "--env-file", "/dev/stdin")
	}
	if len(o.Command) > 0 {
		return append(append(argv, s.Spec.Agent.Image), o.Command...), nil
	}
	if o.Shell {
		argv = append(argv, "--interactive", "--tty")
		argv = append(argv, s.Spec.Agent.Image)
		return append(argv, s.Spec.Shell...), nil
	}
	argv = append(argv, s.Spec.Agent.Image)
	argv = append(argv, s.Spec.Agent.Command...)
	argv = append(argv, "-p")
	switch {
	case o.Resume != "":
		argv = append(argv, "--resume", o.Resume)
	case o.Continue:
		argv = append(argv, "--continue")
	}
	if strings.HasPrefix(o.Prompt, "-") {
		argv = append(argv, "--")
	}
	return append(argv, o.Prompt), nil
}

// replaceRun substitutes the run id for the runspec's run token in every argument.
func replaceRun(args []string, id string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, render.RunToken, id)
	}
	return out
}

// indexAfter returns the index of the value following flag.
func indexAfter(args []string, flag string) int {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return i + 1
		}
	}
	return 0
}

func writeJSON(path string, v any) {
	if b, err := marshalIndent(v); err == nil {
		os.WriteFile(path, b, 0o600)
	}
}
