package sandbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// jumpClock is a wall clock a test moves: it stands still until jump, as a suspended machine's
// clocks seem to from inside, and then is past the deadline at once, as the wall clock is on
// waking.
type jumpClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *jumpClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestWallDeadline: a run's deadline is kept on the wall clock. A machine suspended for a night
// wakes with its wall clock past a one-hour deadline that a timer (monotonic, stopped during
// the suspend) would put an hour later still: the run ends within a tick of waking, with the
// deadline as the cause.
func TestWallDeadline(t *testing.T) {
	clock := &jumpClock{now: time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC)}
	ctx, cancel := withWallDeadline(context.Background(), clock.Now().Add(time.Hour), clock.Now, 10*time.Millisecond)
	defer cancel()
	select {
	case <-ctx.Done():
		t.Fatal("the deadline passed before the wall clock reached it")
	case <-time.After(50 * time.Millisecond):
	}
	clock.jump(9 * time.Hour) // the night
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the run went on after waking past its deadline")
	}
	if !errors.Is(context.Cause(ctx), errDeadline) {
		t.Errorf("cause %v, want the deadline", context.Cause(ctx))
	}
}

// TestWallDeadlineCancel: a run that ends first is not a timeout.
func TestWallDeadlineCancel(t *testing.T) {
	ctx, cancel := withWallDeadline(context.Background(), time.Now().Add(time.Hour), time.Now, time.Second)
	cancel()
	<-ctx.Done()
	if errors.Is(context.Cause(ctx), errDeadline) {
		t.Error("a cancelled run counts as a timeout")
	}
}

// TestEndedAs: a run ended by its caller is recorded as the caller's cause says, and as
// interrupted without one.
func TestEndedAs(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&Ended{Outcome: "hangup", Why: "the terminal closed (SIGHUP)"})
	if endedAs(ctx) != "hangup" || endedWhy(ctx) != "the terminal closed (SIGHUP)" {
		t.Errorf("ended as %q (%q)", endedAs(ctx), endedWhy(ctx))
	}
	plain, stop := context.WithCancel(context.Background())
	stop()
	if endedAs(plain) != "interrupted" {
		t.Errorf("a plain cancel ended as %q, want interrupted", endedAs(plain))
	}
}
