package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Runner runs one docker CLI invocation. A non-zero exit status is not an error at this level: it
// is reported in [Result.ExitCode]. The error is for a docker that could not be started or was
// stopped because ctx ended.
type Runner interface {
	Run(ctx context.Context, inv Invocation) (Result, error)
}

// Invocation is one run of the docker CLI.
//
// Secrets travel in Stdin or in files, never in Args or Env.
type Invocation struct {
	// Args is the argv without the leading "docker".
	Args []string
	// Env holds extra KEY=VALUE entries for the CLI's own environment, on top of abox's
	// (DOCKER_BUILDKIT=0 for builds). Never a secret.
	Env []string
	// Stdin, when set, is copied to the CLI's standard input.
	Stdin io.Reader
	// Stdout and Stderr, when set, receive the output live. It is still captured in [Result]
	// unless StreamOnly is set.
	Stdout, Stderr io.Writer
	// StreamOnly stops the capture of a stream that has a live writer, for long output such as
	// `logs --follow`. The last [StderrTail] bytes of stderr are always kept, for error messages.
	StreamOnly bool
	// TTY attaches the CLI to abox's own terminal (standard input, output and error inherited),
	// for `abox shell`. Nothing is captured and Stdin, Stdout and Stderr are ignored.
	TTY bool
}

// Result is what a finished invocation produced.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// StderrTail is how much of stderr a [StreamOnly] invocation still keeps.
const StderrTail = 64 << 10

// DefaultGrace is how long [ExecRunner] waits after SIGTERM before it sends SIGKILL.
const DefaultGrace = 3 * time.Second

// ExecRunner runs the real docker binary, without a shell.
//
// A non-TTY invocation runs in its own process group, so a Ctrl-C typed at the terminal reaches
// abox alone, and abox decides what to stop. When ctx ends, the group gets SIGTERM and, Grace
// later, SIGKILL. Killing the CLI does not stop a container it started: `docker run` forwards
// SIGTERM to the container's PID 1, which ignores it unless the container runs with --init.
//
// The zero value is ready to use. An ExecRunner is safe for concurrent use.
type ExecRunner struct {
	// Binary is the docker executable: a path, or a name looked up in PATH. Default "docker".
	Binary string
	// Grace is the time between SIGTERM and SIGKILL. Default [DefaultGrace].
	Grace time.Duration
}

// Run implements [Runner].
func (r *ExecRunner) Run(ctx context.Context, inv Invocation) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("docker %s: %w", commandName(inv.Args), err)
	}
	cmd := exec.Command(r.binary(), inv.Args...)
	cmd.Env = append(os.Environ(), inv.Env...)
	cmd.WaitDelay = r.grace() // output pipes held open by a leftover process
	var out *outputs
	if inv.TTY {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdin = inv.Stdin
		out = newOutputs(inv)
		cmd.Stdout, cmd.Stderr = out.stdout, out.stderr
	}
	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("running docker: %w", err)
	}
	stop := r.watch(ctx, cmd.Process.Pid, !inv.TTY)
	waitErr := cmd.Wait()
	canceled := stop()
	res := out.result()
	res.ExitCode = exitCode(cmd.ProcessState)
	if canceled {
		return res, fmt.Errorf("docker %s: %w", commandName(inv.Args), ctx.Err())
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("docker %s: %w", commandName(inv.Args), waitErr)
	}
	return res, nil
}

func (r *ExecRunner) binary() string {
	if r.Binary == "" {
		return "docker"
	}
	return r.Binary
}

func (r *ExecRunner) grace() time.Duration {
	if r.Grace <= 0 {
		return DefaultGrace
	}
	return r.Grace
}

// watch signals the process (its whole group when group is set) once ctx ends: SIGTERM, then
// SIGKILL after the grace period. The returned stop function must be called once the process
// has been waited for; it reports whether ctx ended while the process ran.
func (r *ExecRunner) watch(ctx context.Context, pid int, group bool) (stop func() bool) {
	target := pid
	if group {
		target = -pid
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var canceled bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done: // finished as ctx ended: keep its result
			return
		default:
		}
		canceled = true
		_ = syscall.Kill(target, syscall.SIGTERM)
		t := time.NewTimer(r.grace())
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			_ = syscall.Kill(target, syscall.SIGKILL)
		}
	}()
	return func() bool {
		close(done)
		wg.Wait()
		if canceled && group {
			// The leader is gone; make sure nothing it started outlives it.
			_ = syscall.Kill(target, syscall.SIGKILL)
		}
		return canceled
	}
}

// exitCode reports the exit status, or 128+N for a process killed by signal N, as a shell does.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// outputs captures a non-TTY invocation's stdout and stderr, optionally teeing them to the
// invocation's live writers. os/exec copies each stream in its own goroutine, so a CLI that fills
// one pipe while abox waits on the other cannot deadlock.
type outputs struct {
	stdout, stderr io.Writer
	outBuf         *bytes.Buffer
	errBuf         *tailBuffer
}

// newOutputs sets up the capture and live copies of inv's output. Live writes to Stdout and
// Stderr are serialised, so one writer may serve both.
func newOutputs(inv Invocation) *outputs {
	mu := &sync.Mutex{}
	o := &outputs{errBuf: &tailBuffer{max: StderrTail}}
	if inv.StreamOnly && inv.Stdout != nil {
		o.stdout = tee(nil, inv.Stdout, mu)
	} else {
		o.outBuf = &bytes.Buffer{}
		o.stdout = tee(o.outBuf, inv.Stdout, mu)
	}
	if !inv.StreamOnly || inv.Stderr == nil {
		o.errBuf.max = 0 // unbounded
	}
	o.stderr = tee(o.errBuf, inv.Stderr, mu)
	return o
}

func (o *outputs) result() Result {
	if o == nil {
		return Result{}
	}
	var res Result
	if o.outBuf != nil {
		res.Stdout = o.outBuf.Bytes()
	}
	res.Stderr = o.errBuf.Bytes()
	return res
}

// tee writes to buf, when set, and to live, when set, holding mu around the live write. A failing
// live writer does not stop the capture: a broken terminal must not lose the error message.
func tee(buf io.Writer, live io.Writer, mu *sync.Mutex) io.Writer {
	if live == nil {
		return buf
	}
	return &teeWriter{buf: buf, live: live, mu: mu}
}

type teeWriter struct {
	buf, live io.Writer
	mu        *sync.Mutex
	liveErr   error
}

func (t *teeWriter) Write(p []byte) (int, error) {
	if t.buf != nil {
		_, _ = t.buf.Write(p)
	}
	if t.liveErr == nil {
		t.mu.Lock()
		_, t.liveErr = t.live.Write(p)
		t.mu.Unlock()
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written to it; max 0 keeps everything.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if t.max > 0 && len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// Bytes returns what the buffer holds.
func (t *tailBuffer) Bytes() []byte { return t.b }
