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
	bin := AboxBinary(h.T)
	ctx, cancel := context.WithTimeout(context.Background(), h.AboxTimeout)
	defer cancel()
	master, slave, err := openPTY()
	if err != nil {
		h.T.Fatalf("abox %s on a terminal: %v", strings.Join(args, " "), err)
	}
	defer master.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = append(h.Env(), "TERM=xterm"), h.Workspace
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	start := time.Now()
	err = cmd.Start()
	slave.Close() // the child holds it now; the master reads EIO once every holder is gone
	if err != nil {
		h.T.Fatalf("abox %s on a terminal: %v", strings.Join(args, " "), err)
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(answeringWriter{&out, master}, master)
		close(done)
	}()
	err = cmd.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // something abox started still holds the terminal
		master.Close()
		<-done
	}
	res := Result{Stdout: out.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	case err != nil:
		h.T.Fatalf("abox %s on a terminal: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		h.T.Fatalf("abox %s on a terminal: %v\n%s", strings.Join(args, " "), ctx.Err(), res)
	}
	h.T.Logf("abox %s (on a terminal): exit %d in %.1fs", strings.Join(args, " "), res.ExitCode, time.Since(start).Seconds())
	h.WaitAfterRun()
	return res
}

// answeringWriter records what abox writes to the terminal and answers the two queries a
// terminal emulator answers at once: bubbletea's init (a dependency of the `abox init` picker)
// asks every abox started on a terminal for its background colour (OSC 11) and its cursor
// position, and waits five seconds for a terminal that says nothing.
type answeringWriter struct {
	out    *bytes.Buffer
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
