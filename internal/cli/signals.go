package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/aboxhq/abox/internal/sandbox"
)

// endings says, for each signal that ends a command, how a run it ends is recorded. A run ends
// the same way for all of them: the teardown runs to its end, and further signals are ignored
// meanwhile. SIGQUIT no longer dumps goroutines: it is Ctrl-\ on a terminal, and a sandbox
// left running matters more.
var endings = map[os.Signal]*sandbox.Ended{
	syscall.SIGINT:  {Outcome: "interrupted", Why: "interrupted"},
	syscall.SIGTERM: {Outcome: "interrupted", Why: "interrupted (SIGTERM)"},
	syscall.SIGQUIT: {Outcome: "interrupted", Why: "interrupted (SIGQUIT)"},
	syscall.SIGHUP:  {Outcome: "hangup", Why: "the terminal closed (SIGHUP)"},
}

// outputClosed is how a run ends when abox's output is closed under it: `abox run … | head`.
var outputClosed = &sandbox.Ended{Outcome: "output-closed", Why: "abox's output was closed (a broken pipe)"}

// notifyEnd returns a context that ends at the first of [endings]' signals, with the
// [sandbox.Ended] of that signal as its cause, and the function that ends it (with such a cause)
// for other reasons. SIGPIPE is taken too, and dropped, so that a write to a closed standard
// output or error returns EPIPE ([endOnEPIPE]) rather than killing abox before its teardown.
func notifyEnd(parent context.Context) (ctx context.Context, end context.CancelCauseFunc, stop func()) {
	ctx, end = context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGPIPE)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				if e := endings[sig]; e != nil {
					end(e)
				}
			case <-quit:
				return
			}
		}
	}()
	return ctx, end, func() {
		signal.Stop(sigs)
		close(quit)
		end(context.Canceled)
	}
}

// endOnEPIPE is an output that ends the command ([outputClosed]) the first time a write finds
// that nothing reads it any more.
type endOnEPIPE struct {
	w   io.Writer
	end context.CancelCauseFunc
}

func (o endOnEPIPE) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		o.end(outputClosed)
	}
	return n, err
}
