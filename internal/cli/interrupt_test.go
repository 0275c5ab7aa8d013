package cli

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aboxhq/abox/internal/sandbox"
)

// TestInterruptedDropsTheHint: an error a command ended with because of Ctrl-C or SIGTERM says
// so and loses the hint written for a real failure; errors of a command that was not
// interrupted, exit statuses and the sandbox's own interruption are left alone.
func TestInterruptedDropsTheHint(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	failure := errorf("run `abox up` to create it", "network abox-net: docker network inspect: context canceled")
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want string
		code int
	}{
		{"interrupted", canceled, failure,
			"error: interrupted: network abox-net: docker network inspect: context canceled\n", ExitError},
		{"not interrupted", context.Background(), failure,
			"error: network abox-net: docker network inspect: context canceled\n  ↳ run `abox up` to create it\n", ExitError},
		{"agent's exit status", canceled, silentExit(137), "", 137},
		{"sandbox interrupted", canceled, sandbox.ErrInterrupted, "error: interrupted before the agent started\n", ExitError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := report(&b, interrupted(tc.ctx, tc.err)); code != tc.code || b.String() != tc.want {
				t.Errorf("report = %d %q, want %d %q", code, b.String(), tc.code, tc.want)
			}
		})
	}
	if err := interrupted(canceled, failure); errors.Unwrap(err) != nil {
		t.Error("an interrupted error unwraps to the failure and its hint")
	}
}
