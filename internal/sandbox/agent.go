package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/telemetry"
)

// runAgent starts the agent attached, tees its output to the transcript, and ends it on
// timeout (on the wall clock: [withWallDeadline]), on ctx's end (Ctrl-C, a closed terminal) or
// when netd dies (the agent is then offline anyway). The warden learns the deadline before the
// agent starts.
func (s *Sandbox) runAgent(ctx context.Context, o Options, out *Outcome, c *clock) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var deadline time.Time
	if o.Timeout > 0 {
		deadline = s.Now().Round(0).Add(o.Timeout)
		var c2 context.CancelFunc
		actx, c2 = withWallDeadline(actx, deadline, s.Now, deadlineTick)
		defer c2()
	}
	if out.ward != nil {
		out.ward.Deadline = deadline
		if !o.Shell {
			out.ward.Transcript = filepath.Join(out.Dir, "transcript.jsonl")
		}
		s.ward(out, phaseAgent)
	}
	netdDied := make(chan struct{})
	go func() {
		// docker wait returns when netd exits; if the agent is still running, it has no network.
		s.Docker.Run(actx, docker.Invocation{Args: []string{"wait", out.Netd}})
		if actx.Err() == nil {
			close(netdDied)
			cancel()
		}
	}()
	var err error
	if o.Shell {
		err = s.attachShell(actx, out)
	} else {
		err = s.attachRun(actx, o, out)
	}
	if !out.firstOutput.IsZero() {
		c.markAt("agent start", out.firstOutput)
	}
	c.mark("agent run")
	s.settle(ctx, actx, out, netdDied, o.Timeout, deadline)
	c.mark("agent exit")
	return err
}

// settle works out why the agent ended, and kills it if it did not end by itself. Its exit code
// is read by the teardown ([Sandbox.readExit]), alongside netd's stop. A run whose deadline
// passed is a timeout even when the agent was already gone (killed by the warden while abox
// was stopped).
func (s *Sandbox) settle(ctx, actx context.Context, out *Outcome, netdDied chan struct{}, timeout time.Duration, deadline time.Time) {
	select {
	case <-netdDied:
		out.Result = "netd-died"
		out.note("netd exited during the run; the agent was left without network and stopped")
	default:
		switch {
		case ctx.Err() != nil:
			out.Result = endedAs(ctx)
			out.note("%s; the sandbox was torn down", endedWhy(ctx))
		case errors.Is(context.Cause(actx), errDeadline) || pastDeadline(deadline, s.Now()):
			out.Result = "timeout"
			out.note("the run hit its timeout of %s and was stopped", timeout)
		default:
			out.Result = "exited"
		}
	}
	if out.Result != "exited" {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		s.Docker.Kill(kctx, out.Agent, "KILL")
	}
	out.exitToRead = true
}

// readExitTimeout bounds the inspect of the agent's exit status, from when it starts.
const readExitTimeout = 20 * time.Second

// readExit reads the exit code of an agent that ran from its container; one still running, or
// one that cannot be inspected, counts as 1 unless it exited by itself. The teardown calls it
// before it removes the agent, while netd stops: it is off the run's critical path. base carries
// no cancellation (see [Sandbox.Run]).
func (s *Sandbox) readExit(base context.Context, out *Outcome) {
	ctx, cancel := context.WithTimeout(base, readExitTimeout)
	defer cancel()
	if c, err := s.Docker.ContainerInspect(ctx, out.Agent); err == nil && !c.State.Running {
		out.ExitCode = c.State.ExitCode
	} else if out.Result != "exited" && out.ExitCode == 0 {
		out.ExitCode = 1
	}
}

// attachRun starts the agent attached to its output and records every line.
func (s *Sandbox) attachRun(ctx context.Context, o Options, out *Outcome) error {
	out.Transcript = filepath.Join(out.Dir, "transcript.jsonl")
	f, err := os.OpenFile(out.Transcript, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.consume(pr, f, o, out)
	}()
	stderr := &tailBuffer{max: 4096}
	_, err = s.Docker.Run(ctx, docker.Invocation{
		Args: []string{"start", "--attach", out.Agent}, Stdout: pw, Stderr: stderr, StreamOnly: true,
	})
	pw.Close()
	wg.Wait()
	if line := stderr.lastLine(); line != "" {
		out.note("agent stderr: %s", line)
	}
	var ee *docker.ExitError
	if errors.As(err, &ee) || ctx.Err() != nil {
		return nil // the agent's own exit status; settle reads it from the container
	}
	return err
}

// consume tees stdout lines into the transcript and shows them: on a terminal (Pretty) escaped
// by telemetry's pretty view, otherwise as recorded. A transcript that cannot be written (a
// full disk) becomes a note; the agent's output is still shown. Showing never holds the run up
// ([display]): consume reads the agent's output as fast as it comes, whoever reads abox's.
func (s *Sandbox) consume(r io.Reader, transcript io.Writer, o Options, out *Outcome) {
	var disp *display
	if o.Output != nil {
		disp = newDisplay(o.Output)
		defer func() {
			if n := disp.finish(displayStall); n > 0 {
				out.note("%d line(s) of the agent's output were not shown: nothing read abox's output fast enough (the transcript has every line)", n)
			}
		}()
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var werr error
	var shown bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		if out.firstOutput.IsZero() {
			out.firstOutput = s.Now()
		}
		if werr == nil {
			if _, werr = transcript.Write(append(append([]byte{}, line...), '\n')); werr != nil {
				out.note("the transcript is incomplete: %v", werr)
			}
		}
		ev, ok := out.Summary.Observe(line)
		if disp == nil {
			continue
		}
		shown.Reset()
		switch {
		case o.Pretty && ok:
			telemetry.Pretty(&shown, ev)
		case o.Pretty:
			telemetry.PrettyText(&shown, line)
		default:
			shown.Write(line)
			shown.WriteByte('\n')
		}
		disp.show(shown.Bytes())
	}
	io.Copy(io.Discard, r)
}

// displayStall is how long a run's end waits for abox's output to take the agent's last lines
// while it takes nothing at all.
const displayStall = 2 * time.Second

// maxDisplayQueue bounds the agent's output waiting to be shown.
const maxDisplayQueue = 16 << 20

// display shows the agent's output to a person without the run ever waiting for them: lines
// are queued (up to [maxDisplayQueue] bytes) and written by a goroutine of their own. Nobody
// reading abox's output — `abox run … | less` left on its first page, a terminal stopped with
// Ctrl-S — then costs the run nothing: what does not fit is not shown (it is in the
// transcript), and counted. A write blocked for good blocks that goroutine only; signals, the
// deadline and the teardown go on.
type display struct {
	w       io.Writer
	queue   chan []byte
	queued  atomic.Int64
	dropped atomic.Int64
	wrote   atomic.Int64 // when the last write returned, in Unix nanoseconds
	done    chan struct{}
}

func newDisplay(w io.Writer) *display {
	d := &display{w: w, queue: make(chan []byte, 4096), done: make(chan struct{})}
	d.wrote.Store(time.Now().UnixNano())
	go func() {
		defer close(d.done)
		for b := range d.queue {
			d.w.Write(b)
			d.queued.Add(-int64(len(b)))
			d.wrote.Store(time.Now().UnixNano())
		}
	}()
	return d
}

// show queues b (copied) to be shown, or counts it as not shown when the queue is full.
func (d *display) show(b []byte) {
	if d.queued.Load()+int64(len(b)) > maxDisplayQueue {
		d.dropped.Add(1)
		return
	}
	select {
	case d.queue <- bytes.Clone(b):
		d.queued.Add(int64(len(b)))
	default:
		d.dropped.Add(1)
	}
}

// finish lets the queue drain, for as long as the output takes something at least every stall,
// and returns how many lines were not shown (dropped, or still queued when it gave up).
func (d *display) finish(stall time.Duration) int64 {
	close(d.queue)
	for {
		select {
		case <-d.done:
			return d.dropped.Load()
		case <-time.After(stall / 4):
		}
		if time.Since(time.Unix(0, d.wrote.Load())) > stall {
			return d.dropped.Load() + int64(len(d.queue)) + 1 // and the line being written
		}
	}
}

// attachShell starts the agent's shell on the user's terminal.
func (s *Sandbox) attachShell(ctx context.Context, out *Outcome) error {
	_, err := s.Docker.Run(ctx, docker.Invocation{
		Args: []string{"start", "--attach", "--interactive", out.Agent}, TTY: true,
	})
	var ee *docker.ExitError
	if errors.As(err, &ee) || ctx.Err() != nil {
		return nil
	}
	return err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := splitLines(string(t.buf))
	if len(lines) == 0 {
		return ""
	}
	l := lines[len(lines)-1]
	if len(l) > 300 {
		l = l[:300]
	}
	return l
}
