//go:build bench && e2e

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// measured is one process run by the benches.
type measured struct {
	Stdout, Stderr string
	ExitCode       int
	Wall           time.Duration
	MaxRSSKiB      int64 // getrusage of the waited process: the max over it and its waited children
	HWMKiB         int64 // the process's own VmHWM, sampled until it exits
}

// runMeasured runs one command to its end and measures it.
func runMeasured(t *testing.T, dir string, env []string, name string, args ...string) measured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	hwm := make(chan int64, 1)
	done := make(chan struct{})
	go func() { hwm <- sampleHWM(cmd.Process.Pid, done) }()
	err := cmd.Wait()
	wall := time.Since(start)
	close(done)
	m := measured{Stdout: out.String(), Stderr: errb.String(), Wall: wall, HWMKiB: <-hwm}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.MaxRSSKiB = ru.Maxrss
	}
	if err != nil {
		if ctx.Err() != nil {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), ctx.Err())
		}
		m.ExitCode = cmd.ProcessState.ExitCode()
	}
	return m
}

// sampleHWM polls /proc/<pid>/status every 10 ms and returns the last VmHWM seen; the high-water
// mark only grows, so the last sample is within 10 ms of the final one.
func sampleHWM(pid int, done <-chan struct{}) int64 {
	var last int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if v := procStatusKiB(pid, "VmHWM"); v > 0 {
			last = v
		}
		select {
		case <-done:
			return last
		case <-tick.C:
		}
	}
}

// procStatusKiB reads one "Key: N kB" field of /proc/<pid>/status; 0 when unreadable.
func procStatusKiB(pid int, key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// abox runs p's abox binary in p's workspace with the world's environment.
func (w *world) abox(t *testing.T, p *project, args ...string) measured {
	t.Helper()
	return runMeasured(t, p.dir, w.h.Env(), p.bin, args...)
}

// docker runs the docker CLI and measures it.
func (w *world) docker(t *testing.T, args ...string) measured {
	t.Helper()
	return runMeasured(t, "", append(os.Environ(), "DOCKER_BUILDKIT=0"), "docker", args...)
}

// mustOK fails the test when m exited non-zero.
func mustOK(t *testing.T, what string, m measured) measured {
	t.Helper()
	if m.ExitCode != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, m.ExitCode, tail(m.Stdout), tail(m.Stderr))
	}
	return m
}

func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}

// alternate runs a and b in turn n times, after one discarded warm-up of each, and returns
// their samples in order: A B A B …, so that the machine's slow moments hit both sides.
func alternate(n int, a, b func() float64) (as, bs []float64) {
	s := rotate(n, a, b)
	return s[0], s[1]
}

// rotate is [alternate] for any number of sides: A B C A B C …
func rotate(n int, sides ...func() float64) [][]float64 {
	for _, f := range sides {
		f()
	}
	out := make([][]float64, len(sides))
	for range n {
		for i, f := range sides {
			out[i] = append(out[i], f())
		}
	}
	return out
}
