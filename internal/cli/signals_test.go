package cli

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/sandbox"
)

// TestNotifyEnd: each signal that ends abox ends its context with the cause a run is recorded
// by — a closed terminal (SIGHUP) as a hangup, SIGINT, SIGTERM and SIGQUIT as an interruption —
// instead of killing abox before its teardown. SIGPIPE ends nothing by itself.
func TestNotifyEnd(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want string
	}{
		{syscall.SIGHUP, "hangup"},
		{syscall.SIGINT, "interrupted"},
		{syscall.SIGTERM, "interrupted"},
		{syscall.SIGQUIT, "interrupted"},
	} {
		ctx, _, stop := notifyEnd(context.Background())
		syscall.Kill(os.Getpid(), syscall.SIGPIPE)
		syscall.Kill(os.Getpid(), tc.sig)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%v did not end the context", tc.sig)
		}
		var e *sandbox.Ended
		if !errors.As(context.Cause(ctx), &e) || e.Outcome != tc.want {
			t.Errorf("%v: cause %v, want a run ended as %s", tc.sig, context.Cause(ctx), tc.want)
		}
		stop()
	}
}

// TestEndOnEPIPE: a write to an output nobody reads any more ends the command with
// output-closed; other writes and errors do not.
func TestEndOnEPIPE(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, end := context.WithCancelCause(context.Background())
	out := endOnEPIPE{w, end}
	if _, err := out.Write([]byte("read\n")); err != nil || ctx.Err() != nil {
		t.Fatalf("a write someone reads: %v, context %v", err, ctx.Err())
	}
	r.Close()
	if _, err := out.Write([]byte("nobody\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a closed pipe: %v, want EPIPE", err)
	}
	var e *sandbox.Ended
	if !errors.As(context.Cause(ctx), &e) || e.Outcome != "output-closed" {
		t.Errorf("cause %v, want output-closed", context.Cause(ctx))
	}
}
