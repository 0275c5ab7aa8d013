//go:build e2e

package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AboxOnTerminal runs abox in the workspace as a person does: stdin, stdout and stderr are one
// pseudo-terminal, abox is its session's controlling process, so abox takes its terminal paths
// (the pretty view of `abox run`). Result.Stdout holds every byte abox wrote to the terminal,
// stdout and stderr interleaved; Result.Stderr is empty. Output post-processing is off, so the
// bytes are exact: a "\r" in them is one something printed, not the terminal's "\n" → "\r\n".
func (h *H) AboxOnTerminal(args ...string) Result {
	h.T.Helper()
	return h.StartOnTerminal(args...).Wait()
}

// Terminal is abox running on a pseudo-terminal of its own ([H.StartOnTerminal]).
type Terminal struct {
	h      *H
	args   []string
	cmd    *exec.Cmd
	master *os.File
	cancel context.CancelFunc
	ctx    context.Context
	start  time.Time
	mu     *lockedBuffer
	done   chan struct{}
	late   atomic.Bool // WaitWithin's bound passed and abox was killed
}

// StartOnTerminal starts abox as [H.AboxOnTerminal] does and returns at once.
func (h *H) StartOnTerminal(args ...string) *Terminal {
	h.T.Helper()
	bin := AboxBinary(h.T)
	ctx, cancel := context.WithTimeout(context.Background(), h.AboxTimeout)
	master, slave, err := openPTY()
	if err != nil {
		cancel()
		h.T.Fatalf("abox %s on a terminal: %v", strings.Join(args, " "), err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = append(h.Env(), "TERM=xterm"), h.Workspace
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	t := &Terminal{h: h, args: args, cmd: cmd, master: master, ctx: ctx, cancel: cancel, start: time.Now(),
		mu: &lockedBuffer{}, done: make(chan struct{})}
	err = cmd.Start()
	slave.Close() // the child holds it now; the master reads EIO once every holder is gone
	if err != nil {
		master.Close()
		cancel()
		h.T.Fatalf("abox %s on a terminal: %v", strings.Join(args, " "), err)
	}
	go func() {
		io.Copy(answeringWriter{t.mu, master}, master)
		close(t.done)
	}()
	return t
}

// Type writes s to the terminal, as keystrokes.
func (t *Terminal) Type(s string) { t.master.Write([]byte(s)) }

// Output is what abox wrote to the terminal so far.
func (t *Terminal) Output() string { return t.mu.String() }

// Hangup closes the terminal, as closing its window does: the kernel hangs it up and sends
// SIGHUP to abox, the session's controlling process, and to its foreground process group.
func (t *Terminal) Hangup() { t.master.Close() }

// WaitWithin is [Terminal.Wait] for at most d: an abox still running then is killed, with its
// process group, and the test fails. A test that waits for abox to end by itself (at a hang-up)
// fails in its own time that way, rather than at the suite's timeout with no FAIL line.
func (t *Terminal) WaitWithin(d time.Duration) Result {
	t.h.T.Helper()
	timer := time.AfterFunc(d, func() {
		t.late.Store(true)
		syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		t.cmd.Process.Kill()
	})
	defer timer.Stop()
	res := t.Wait()
	if t.late.Load() {
		t.h.T.Fatalf("abox %s still ran %s after it was waited for\n%s", strings.Join(t.args, " "), d, res)
	}
	return res
}

// Wait waits for abox to end and returns what it wrote to the terminal.
func (t *Terminal) Wait() Result {
	t.h.T.Helper()
	defer t.cancel()
	err := t.cmd.Wait()
	select {
	case <-t.done:
	case <-time.After(10 * time.Second): // something abox started still holds the terminal
		t.master.Close()
		<-t.done
	}
	t.master.Close()
	res := Result{Stdout: t.mu.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		}
	case err != nil:
		t.h.T.Fatalf("abox %s on a terminal: %v", strings.Join(t.args, " "), err)
	}
	if t.ctx.Err() != nil {
		t.h.T.Fatalf("abox %s on a terminal: %v\n%s", strings.Join(t.args, " "), t.ctx.Err(), res)
	}
	t.h.T.Logf("abox %s (on a terminal): exit %d in %.1fs", strings.Join(t.args, " "), res.ExitCode, time.Since(t.start).Seconds())
	t.h.WaitAfterRun()
	return res
}

// lockedBuffer is a bytes.Buffer safe to write from one goroutine and read from another.
type lockedBuffer struct {
	m sync.Mutex
	b bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.m.Lock()
	defer l.m.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.m.Lock()
	defer l.m.Unlock()
	return l.b.String()
}

// answeringWriter records what abox writes to the terminal and answers the two queries a
// terminal emulator answers at once: bubbletea's init (a dependency of the `abox init` picker)
// asks every abox started on a terminal for its background colour (OSC 11) and its cursor
// position, and waits five seconds for a terminal that says nothing.
type answeringWriter struct {
	out    io.Writer
	master io.Writer
}

func (w answeringWriter) Write(p []byte) (int, error) {
	w.out.Write(p)
	if bytes.Contains(p, []byte("\x1b]11;?")) {
		w.master.Write([]byte("\x1b]11;rgb:0000/0000/0000\x1b\\"))
	}
	if bytes.Contains(p, []byte("\x1b[6n")) {
		w.master.Write([]byte("\x1b[1;1R"))
	}
	return len(p), nil
}

// openPTY opens a new pseudo-terminal and returns its master and its slave, 50×200, with echo
// and output post-processing off.
func openPTY() (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	// non-blocking, so that the runtime poller reads it and Close ends a pending read
	if err := unix.SetNonblock(mfd, true); err != nil {
		unix.Close(mfd)
		return nil, nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(mfd), "/dev/ptmx")
	fail := func(what string, err error) (*os.File, *os.File, error) {
		master.Close()
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlocking the pty", err)
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err != nil {
		return fail("reading the pty's number", err)
	}
	name := fmt.Sprintf("/dev/pts/%d", n)
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("opening "+name, err)
	}
	slave = os.NewFile(uintptr(sfd), name)
	tio, err := unix.IoctlGetTermios(sfd, unix.TCGETS)
	if err == nil {
		tio.Oflag &^= unix.OPOST
		tio.Lflag &^= unix.ECHO
		err = unix.IoctlSetTermios(sfd, unix.TCSETS, tio)
	}
	if err == nil {
		err = unix.IoctlSetWinsize(sfd, unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 200})
	}
	if err != nil {
		slave.Close()
		return fail("setting up "+name, err)
	}
	return master, slave, nil
}
