package docker_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
)

// cancellingRunner cancels its caller's context while a call is in flight, as a Ctrl-C does,
// and records whether the call's own context ended with it.
type cancellingRunner struct {
	cancel   context.CancelFunc
	stdin    string
	canceled bool
}

func (r *cancellingRunner) Run(ctx context.Context, inv docker.Invocation) (docker.Result, error) {
	r.cancel()
	if inv.Stdin != nil {
		b, _ := io.ReadAll(inv.Stdin)
		r.stdin = string(b)
	}
	r.canceled = ctx.Err() != nil
	return docker.Result{Stdout: []byte("c0ffee\n")}, nil
}

// TestCreatingCallsOutliveCancel: `docker create` and `docker run --detach` that have started
// run to their end when the caller's context is cancelled, so the caller learns the ID of the
// container the daemon made and can remove it; killing the CLI mid-call would leave it behind.
// A call is not started once the context has ended.
func TestCreatingCallsOutliveCancel(t *testing.T) {
	calls := map[string]func(*docker.Client, context.Context) (string, error){
		"create": func(c *docker.Client, ctx context.Context) (string, error) {
			return c.Create(ctx, []string{"create", "img"})
		},
		"create with input": func(c *docker.Client, ctx context.Context) (string, error) {
			return c.CreateWithInput(ctx, []string{"create", "--env-file", "/dev/stdin", "img"}, strings.NewReader("K=v\n"))
		},
		"run --detach": func(c *docker.Client, ctx context.Context) (string, error) {
			return c.RunDetached(ctx, []string{"run", "img"})
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			r := &cancellingRunner{cancel: cancel}
			id, err := call(docker.NewClient(r, nil), ctx)
			if err != nil || id != "c0ffee" || r.canceled {
				t.Errorf("= %q, %v (call's context cancelled: %v), want the ID from a call that ran on", id, err, r.canceled)
			}
			if name == "create with input" && r.stdin != "K=v\n" {
				t.Errorf("stdin = %q", r.stdin)
			}
			if _, err := call(docker.NewClient(r, nil), ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("after cancel: %v, want context.Canceled without running", err)
			}
		})
	}
}
