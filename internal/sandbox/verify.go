package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// verify waits for netd's ready line, runs the runtime canary when the agent's runtime is not
// runc, then reads the loaded ruleset back and compares it with the expected one (and finds the
// canary's refusal counted in it). Any of them failing refuses the run.
func (s *Sandbox) verify(ctx context.Context, o Options, out *Outcome, c *clock, runtime string) error {
	timeout := o.ReadyTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	// A spare's ready line was seen when it was started; the claim made sure it has not been
	// started again since ([Sandbox.spareMismatch]).
	if out.Spare.IsZero() {
		if err := s.waitReady(ctx, out.Netd, timeout); err != nil {
			return fmt.Errorf("%w: netd did not become ready: %v", ErrBoundary, err)
		}
	}
	c.mark("netd ready")
	canary := runtime != render.RuntimeRunc
	if canary {
		if err := s.canary(ctx, out, runtime); err != nil {
			return err
		}
		c.mark("runtime canary")
	}
	loaded := out.readBack       // a spare's, read by [LookAhead]
	if loaded == nil || canary { // the canary's refusal must be in the counters read back
		rctx, cancel := context.WithTimeout(ctx, readBackTimeout)
		defer cancel()
		res, err := s.Docker.Exec(rctx, out.Netd, "0", readBackArgv, nil)
		if err != nil {
			return fmt.Errorf("%w: reading the loaded ruleset: %v", ErrBoundary, err)
		}
		loaded = res.Stdout
	}
	if err := policy.CompareRuleset(s.Baseline, loaded); err != nil {
		return fmt.Errorf("%w: the loaded ruleset differs from netpolicy.nft: %v", ErrBoundary, err)
	}
	if canary {
		if err := canaryCounted(runtime, loaded); err != nil {
			return err
		}
	}
	if !out.Spare.IsZero() {
		base, err := policy.ParseCounters(loaded)
		if err != nil {
			return fmt.Errorf("%w: reading the spare netd's counters: %v", ErrBoundary, err)
		}
		out.counterBase = &base
	}
	c.mark("policy verify")
	return nil
}

// readBackArgv reads the ruleset loaded in netd's namespace, run in netd's container as root.
var readBackArgv = []string{"/usr/sbin/nft", "-j", "list", "ruleset"}

// readBackTimeout bounds the read-back of the loaded ruleset, from when it starts.
const readBackTimeout = 30 * time.Second

// errNetdExited is returned when netd stops before reporting the event waited for.
var errNetdExited = errors.New("netd exited")

// waitReady follows netd's output until its ready event, its exit, or the timeout.
func (s *Sandbox) waitReady(ctx context.Context, name string, timeout time.Duration) error {
	return s.waitEvent(ctx, name, policy.EventReady, timeout)
}

// waitEvent follows netd's output until the event, its exit, or the timeout.
func (s *Sandbox) waitEvent(ctx context.Context, name, event string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pr, pw := io.Pipe()
	ready := make(chan error, 1)
	var lines []string
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			var ev policy.Event
			if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &ev) == nil && ev.Event == event {
				ready <- nil
				cancel()
				io.Copy(io.Discard, pr)
				return
			}
		}
		ready <- errNetdExited
	}()
	err := s.Docker.FollowLogs(ctx, name, pw)
	pw.Close()
	res := <-ready
	if res == nil {
		return nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no %s line within %s%s", event, timeout, tail(lines))
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w%s", res, tail(lines))
}

// tail formats the last lines of netd's output for an error message.
func tail(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "; netd said: " + strings.Join(lines, " | ")
}
