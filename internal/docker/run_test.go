package docker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
)

// helperRunner returns an ExecRunner whose "docker" is this test binary in script mode.
func helperRunner(t *testing.T) *docker.ExecRunner {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &docker.ExecRunner{Binary: exe, Grace: 300 * time.Millisecond}
}

// script returns an invocation running the helper script args.
func script(args ...string) docker.Invocation {
	return docker.Invocation{Args: args, Env: []string{helperEnv + "=script"}}
}

func TestExecRunnerCapturesOutputAndExitCode(t *testing.T) {
	r := helperRunner(t)
	res, err := r.Run(context.Background(), script("stdout", "out", "stderr", "err", "exit", "3"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := string(res.Stdout), "out\n"; got != want {
		t.Errorf("Stdout = %q, want %q", got, want)
	}
	if got, want := string(res.Stderr), "err\n"; got != want {
		t.Errorf("Stderr = %q, want %q", got, want)
	}
	if res.ExitCode != 3 {
		t.Errorf("ExitCode = %d, want 3", res.ExitCode)
	}
}

func TestExecRunnerPassesStdinAndEnv(t *testing.T) {
	r := helperRunner(t)
	inv := script("cat", "env", "DOCKER_BUILDKIT")
	inv.Env = append(inv.Env, "DOCKER_BUILDKIT=0")
	inv.Stdin = strings.NewReader("secret-from-stdin\n")
	res, err := r.Run(context.Background(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := string(res.Stdout), "secret-from-stdin\n0\n"; got != want {
		t.Errorf("Stdout = %q, want %q", got, want)
	}
}

func TestExecRunnerLargeOutputBothStreams(t *testing.T) {
	r := helperRunner(t)
	const n = 8 << 20 // far beyond a pipe buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Run(ctx, script("big", strconv.Itoa(n)))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Stdout) < n || len(res.Stderr) < n {
		t.Errorf("captured %d stdout and %d stderr bytes, want at least %d each", len(res.Stdout), len(res.Stderr), n)
	}
}

func TestExecRunnerStreams(t *testing.T) {
	r := helperRunner(t)
	var live bytes.Buffer
	inv := script("stdout", "a", "stderr", "b", "exit", "1")
	inv.Stdout, inv.Stderr, inv.StreamOnly = &live, &live, true
	res, err := r.Run(context.Background(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := live.String(); !strings.Contains(got, "a\n") || !strings.Contains(got, "b\n") {
		t.Errorf("live output = %q, want both streams", got)
	}
	if len(res.Stdout) != 0 {
		t.Errorf("StreamOnly kept stdout %q, want none", res.Stdout)
	}
	if got, want := string(res.Stderr), "b\n"; got != want {
		t.Errorf("StreamOnly stderr tail = %q, want %q", got, want)
	}
}

func TestExecRunnerStreamsAndCaptures(t *testing.T) {
	r := helperRunner(t)
	var live bytes.Buffer
	inv := script("stdout", "a")
	inv.Stdout = &live
	res, err := r.Run(context.Background(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if live.String() != "a\n" || string(res.Stdout) != "a\n" {
		t.Errorf("live %q, captured %q, want both \"a\\n\"", live.String(), res.Stdout)
	}
}

func TestExecRunnerSignalExitCode(t *testing.T) {
	r := helperRunner(t)
	res, err := r.Run(context.Background(), script("kill-self"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Errorf("ExitCode = %d, want %d", res.ExitCode, 128+int(syscall.SIGKILL))
	}
}

func TestExecRunnerMissingBinary(t *testing.T) {
	r := &docker.ExecRunner{Binary: "abox-no-such-docker"}
	_, err := r.Run(context.Background(), docker.Invocation{Args: []string{"ps"}})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Run = %v, want exec.ErrNotFound", err)
	}
}

func TestExecRunnerCancelTerminates(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"sigterm", []string{"stdout", "ready", "sleep", "60s"}, 128 + int(syscall.SIGTERM)},
		{"sigkill after grace", []string{"ignore-term", "stdout", "ready", "sleep", "60s"}, 128 + int(syscall.SIGKILL)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := helperRunner(t)
			ctx, cancel := context.WithCancel(context.Background())
			inv := script(tc.args...)
			inv.Stdout = cancelOnLine(cancel)
			start := time.Now()
			res, err := r.Run(ctx, inv)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v, want context.Canceled", err)
			}
			if res.ExitCode != tc.wantCode {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, tc.wantCode)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Run took %v after cancel", d)
			}
		})
	}
}

// cancelOnLine returns a writer that calls cancel once a full line has been written to it: the
// helper is then past its set-up.
func cancelOnLine(cancel context.CancelFunc) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		if bytes.Contains(p, []byte("\n")) {
			cancel()
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestExecRunnerCancelKillsProcessGroup(t *testing.T) {
	r := helperRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	inv := script("spawn", "sleep", "60s")
	inv.Stdout = cancelOnLine(cancel) // spawn prints the child's pid
	res, err := r.Run(ctx, inv)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	waitGone(t, pid)
}

func TestExecRunnerLeftoverHoldingPipe(t *testing.T) {
	r := helperRunner(t)
	start := time.Now()
	res, err := r.Run(context.Background(), script("spawn-detached"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	if pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v with a leftover holding stdout", d)
	}
}

func TestExecRunnerAlreadyCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := helperRunner(t).Run(ctx, script("stdout", "never"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// waitGone waits until pid has exited (or is a zombie nobody reaps).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("no pid from the helper")
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d survived the cancel of its group", pid)
}

func TestExecRunnerTTYCapturesNothing(t *testing.T) {
	r := helperRunner(t)
	inv := script("exit", "5")
	inv.TTY = true
	inv.Stdout = &bytes.Buffer{} // ignored: the child has abox's own terminal
	res, err := r.Run(context.Background(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 5 || res.Stdout != nil || res.Stderr != nil {
		t.Errorf("Run(TTY) = %+v, want exit 5 and nothing captured", res)
	}
	if inv.Stdout.(*bytes.Buffer).Len() != 0 {
		t.Errorf("TTY invocation wrote to the Stdout writer")
	}
}
