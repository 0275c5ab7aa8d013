package sandbox

import (
	"context"
	"errors"
	"time"
)

// Ended is why the caller ended a run before its agent did: the cause with which it cancels the
// context [Sandbox.Run] was given (context.WithCancelCause). Without one, a cancelled run is
// "interrupted".
type Ended struct {
	Outcome string // the run's recorded outcome: "interrupted", "hangup", "output-closed"
	Why     string // what happened, for the run's notes: "the terminal closed (SIGHUP)"
}

func (e *Ended) Error() string { return e.Why }

// endedAs is the outcome of a run ctx's end stopped.
func endedAs(ctx context.Context) string {
	var e *Ended
	if errors.As(context.Cause(ctx), &e) && e.Outcome != "" {
		return e.Outcome
	}
	return "interrupted"
}

// endedWhy says what stopped a run at ctx's end.
func endedWhy(ctx context.Context) string {
	var e *Ended
	if errors.As(context.Cause(ctx), &e) && e.Why != "" {
		return e.Why
	}
	return "interrupted"
}

// errDeadline is the cause of the end of a run's agent context at its deadline.
var errDeadline = errors.New("the run's deadline passed")

// deadlineTick is how often a run's deadline is looked at on the wall clock.
const deadlineTick = time.Second

// withWallDeadline returns ctx cancelled with [errDeadline] once now() is at or past at on the
// wall clock, looked at every tick (and exactly at at, when no suspend came between). A timer
// alone measures the monotonic clock, which stands still while the machine is suspended: a run
// of an hour on a laptop closed for the night would go on for an hour after it opened.
func withWallDeadline(parent context.Context, at time.Time, now func() time.Time, tick time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	at = at.Round(0)
	go func() {
		for {
			left := at.Sub(now().Round(0))
			if left <= 0 {
				cancel(errDeadline)
				return
			}
			t := time.NewTimer(min(left, tick))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// pastDeadline reports whether at, a run's deadline, is set and passed on the wall clock.
func pastDeadline(at, now time.Time) bool {
	return !at.IsZero() && !now.Round(0).Before(at.Round(0))
}
