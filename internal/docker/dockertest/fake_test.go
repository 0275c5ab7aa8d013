package dockertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
)

// recordingTB is a testing.TB that records failures and cleanups instead of acting on them, so
// that the Fake's own checks can be tested.
type recordingTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recordingTB) Helper()          {}
func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}

func (r *recordingTB) finish() []string {
	for _, f := range r.cleanups {
		f()
	}
	return r.errors
}

func run(t *testing.T, f *Fake, args string) docker.Result {
	t.Helper()
	res, err := f.Run(context.Background(), docker.Invocation{Args: strings.Fields(args)})
	if err != nil {
		t.Fatalf("Run(%q): %v", args, err)
	}
	return res
}

func TestFakeMatchesInOrder(t *testing.T) {
	f := New(t)
	f.On("container inspect abox-gw-dev", docker.Result{Stdout: []byte("once")}).Once()
	f.On("container inspect abox-gw-dev", docker.Result{Stdout: []byte("again")})
	f.On("container inspect", docker.Result{Stdout: []byte("other")})
	got := []string{
		string(run(t, f, "container inspect abox-gw-dev").Stdout),
		string(run(t, f, "container inspect abox-gw-dev --format x").Stdout),
		string(run(t, f, "container inspect abox-gw-dev").Stdout),
		string(run(t, f, "container inspect abox-gw-dev2").Stdout),
	}
	if want := []string{"once", "again", "again", "other"}; !cmp.Equal(got, want) {
		t.Errorf("replies = %q, want %q", got, want)
	}
}

func TestFakeUnmatched(t *testing.T) {
	tb := &recordingTB{TB: t}
	f := New(tb)
	res := run(t, f, "network rm abox-net")
	if res.ExitCode != 125 || !strings.Contains(string(res.Stderr), `fake docker: no reply for "network rm abox-net"`) {
		t.Errorf("unmatched call = %+v, want exit 125 and a clear message", res)
	}
	errs := tb.finish()
	if len(errs) != 1 || !strings.Contains(errs[0], "no reply registered for docker network rm abox-net") {
		t.Errorf("cleanup errors = %q, want one for the unmatched call", errs)
	}
}

func TestFakeUnusedReplies(t *testing.T) {
	tb := &recordingTB{TB: t}
	f := New(tb)
	f.On("ps", docker.Result{})
	f.On("version", docker.Result{}).Optional()
	f.On("network ls", docker.Result{})
	run(t, f, "network ls")
	errs := tb.finish()
	if len(errs) != 1 || !strings.Contains(errs[0], `reply for "ps" was never used`) {
		t.Errorf("cleanup errors = %q, want one for the unused ps reply", errs)
	}
}

func TestFakeOnFuncSeesStdin(t *testing.T) {
	f := New(t)
	f.OnFunc("exec -i netd", func(inv docker.Invocation) (docker.Result, error) {
		in, _ := io.ReadAll(inv.Stdin)
		return docker.Result{Stdout: bytes.ToUpper(in)}, nil
	})
	f.OnFunc("fail", func(docker.Invocation) (docker.Result, error) {
		return docker.Result{ExitCode: -1}, errors.New("boom")
	})
	res, err := f.Run(context.Background(), docker.Invocation{
		Args: []string{"exec", "-i", "netd", "cat"}, Stdin: strings.NewReader("token"),
	})
	if err != nil || string(res.Stdout) != "TOKEN" {
		t.Errorf("Run = %q, %v, want TOKEN", res.Stdout, err)
	}
	if _, err := f.Run(context.Background(), docker.Invocation{Args: []string{"fail"}}); err == nil {
		t.Errorf("OnFunc error was not returned")
	}
	if got := string(f.Calls()[0].Stdin); got != "token" {
		t.Errorf("recorded stdin = %q, want token", got)
	}
}

func TestFakeStreams(t *testing.T) {
	f := New(t)
	f.On("logs", docker.Result{Stdout: []byte("out"), Stderr: []byte("err")})
	var out, errs bytes.Buffer
	res, err := f.Run(context.Background(), docker.Invocation{
		Args: []string{"logs", "x"}, Stdout: &out, Stderr: &errs, StreamOnly: true,
	})
	if err != nil || out.String() != "out" || errs.String() != "err" {
		t.Errorf("streamed %q/%q, %v", out.String(), errs.String(), err)
	}
	if res.Stdout != nil || string(res.Stderr) != "err" {
		t.Errorf("StreamOnly result = %+v, want no stdout and the stderr", res)
	}
}

func TestFakeArgvText(t *testing.T) {
	f := New(t)
	f.On("", docker.Result{})
	_, _ = f.Run(context.Background(), docker.Invocation{Args: []string{"build", "ctx"}, Env: []string{"DOCKER_BUILDKIT=0"}})
	_, _ = f.Run(context.Background(), docker.Invocation{Args: []string{"exec", "-i", "c"}, Stdin: strings.NewReader("s3cret")})
	want := "DOCKER_BUILDKIT=0 build ctx\nexec -i c\n"
	if got := f.ArgvText(); got != want {
		t.Errorf("ArgvText = %q, want %q", got, want)
	}
}

func TestFakeCanceled(t *testing.T) {
	f := New(t)
	f.On("ps", docker.Result{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Run(ctx, docker.Invocation{Args: []string{"ps"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a canceled ctx = %v, want context.Canceled", err)
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		prefix string
		args   []string
		want   bool
	}{
		{"", []string{"ps"}, true},
		{"ps", []string{"ps"}, true},
		{"ps", []string{"ps", "-a"}, true},
		{"ps", []string{"psx"}, false},
		{"container inspect abox-gw", []string{"container", "inspect", "abox-gw-dev"}, false},
		{"inspect --format {{json .}}", []string{"inspect", "--format", "{{json .}}", "x"}, true},
		{"network create x", []string{"network", "create"}, false},
	}
	for _, tc := range tests {
		if got := Matches(tc.prefix, tc.args); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.prefix, tc.args, got, tc.want)
		}
	}
}
