package dockertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
)

// Call is one recorded docker invocation.
type Call struct {
	Args  []string // without "docker"
	Env   []string // extra environment entries ([docker.Invocation].Env); FakeBinary logs none
	Stdin []byte   // everything read from stdin; nil when there was none
	TTY   bool
}

// Fake is a recording [docker.Runner]. Register replies with [Fake.On] or [Fake.OnFunc]; each
// call gets the first reply, in registration order, whose prefix matches its argv. A call that
// matches nothing gets exit status 125 and "fake docker: no reply for …" on stderr, and fails the
// test at cleanup. A reply that was never used fails the test at cleanup too, unless it is
// [Reply.Optional].
//
// A Fake is safe for concurrent use.
type Fake struct {
	t         testing.TB
	mu        sync.Mutex
	replies   []*Reply
	calls     []Call
	unmatched []string
}

// Reply is one registered answer.
type Reply struct {
	prefix   string
	res      docker.Result
	fn       func(docker.Invocation) (docker.Result, error)
	once     bool
	optional bool
	used     int
}

// Once makes the reply answer a single call; later calls fall through to the next match.
func (r *Reply) Once() *Reply { r.once = true; return r }

// Optional lets the reply go unused without failing the test.
func (r *Reply) Optional() *Reply { r.optional = true; return r }

// New returns a Fake that checks, when t finishes, that every call was answered and every
// non-optional reply used.
func New(t testing.TB) *Fake {
	f := &Fake{t: t}
	t.Cleanup(f.check)
	return f
}

// On answers calls whose argv starts with prefix with res. The prefix is space-joined argv
// ("container inspect abox-gw-dev") and matches whole arguments: "ps" does not match "psx".
// An empty prefix matches every call. If the call has live Stdout or Stderr writers, res's output
// is written to them as well.
func (f *Fake) On(prefix string, res docker.Result) *Reply {
	return f.add(&Reply{prefix: prefix, res: res})
}

// OnFunc answers calls whose argv starts with prefix by calling fn. Stdin has been read and
// recorded by then; fn sees it as a fresh reader.
func (f *Fake) OnFunc(prefix string, fn func(docker.Invocation) (docker.Result, error)) *Reply {
	return f.add(&Reply{prefix: prefix, fn: fn})
}

func (f *Fake) add(r *Reply) *Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, r)
	return r
}

// Run implements [docker.Runner].
func (f *Fake) Run(ctx context.Context, inv docker.Invocation) (docker.Result, error) {
	call := Call{Args: append([]string(nil), inv.Args...), Env: append([]string(nil), inv.Env...), TTY: inv.TTY}
	if inv.Stdin != nil {
		data, err := io.ReadAll(inv.Stdin)
		if err != nil {
			return docker.Result{ExitCode: -1}, fmt.Errorf("fake docker: reading stdin: %w", err)
		}
		call.Stdin = data
		inv.Stdin = bytes.NewReader(data)
	}
	r := f.record(call)
	if err := ctx.Err(); err != nil {
		return docker.Result{ExitCode: -1}, err
	}
	if r == nil {
		return unmatchedResult(call.Args), nil
	}
	res, err := r.res, error(nil)
	if r.fn != nil {
		res, err = r.fn(inv)
	}
	return stream(inv, res), err
}

// record stores the call and returns the reply it gets, or nil.
func (f *Fake) record(call Call) *Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	for _, r := range f.replies {
		if (r.once && r.used > 0) || !Matches(r.prefix, call.Args) {
			continue
		}
		r.used++
		return r
	}
	f.unmatched = append(f.unmatched, strings.Join(call.Args, " "))
	return nil
}

// stream copies res's output to the invocation's live writers, and drops a streamed stdout from
// the result when the invocation asked for StreamOnly, as [docker.ExecRunner] does.
func stream(inv docker.Invocation, res docker.Result) docker.Result {
	if inv.Stdout != nil {
		_, _ = inv.Stdout.Write(res.Stdout)
		if inv.StreamOnly {
			res.Stdout = nil
		}
	}
	if inv.Stderr != nil {
		_, _ = inv.Stderr.Write(res.Stderr)
	}
	return res
}

func unmatchedResult(args []string) docker.Result {
	return docker.Result{
		ExitCode: 125,
		Stderr:   fmt.Appendf(nil, "fake docker: no reply for %q\n", strings.Join(args, " ")),
	}
}

// Matches reports whether args starts with the space-joined prefix, on whole arguments.
func Matches(prefix string, args []string) bool {
	joined := strings.Join(args, " ")
	return prefix == "" || joined == prefix || strings.HasPrefix(joined, prefix+" ")
}

// Calls returns a copy of the calls recorded so far, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// ArgvText returns every recorded argv, one per line, each preceded by its extra environment
// entries, so that a test can assert that no secret value appears in any of them. Stdin is not
// included: that is where secrets belong.
func (f *Fake) ArgvText() string {
	var b strings.Builder
	for _, c := range f.Calls() {
		for _, e := range c.Env {
			b.WriteString(e + " ")
		}
		b.WriteString(strings.Join(c.Args, " ") + "\n")
	}
	return b.String()
}

// check reports unmatched calls and unused replies.
func (f *Fake) check() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, argv := range f.unmatched {
		f.t.Errorf("dockertest: no reply registered for docker %s", argv)
	}
	for _, r := range f.replies {
		if r.used == 0 && !r.optional {
			f.t.Errorf("dockertest: reply for %q was never used", r.prefix)
		}
	}
}
