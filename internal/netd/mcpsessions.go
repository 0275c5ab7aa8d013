package netd

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// The gateway is long-lived and shared by every run of its profile, and it never times out an
// MCP session: a session lives, with its long-lived server containers, until a DELETE closes it
// or the gateway exits. Claude Code sends no DELETE when it exits, and the agent is killed at
// teardown anyway, so netd closes what it forwarded: the forwarder remembers every session the
// gateway opened through it, and when the serving child stops it DELETEs each one the agent left
// open, with the token the agent never holds.
//
// A session id is remembered only from the gateway's answer to an initialize that carried no
// session id, so netd never sends the gateway an id it did not issue through this forwarder, to
// the gateway that issued it: the agent cannot make netd close another run's session. It is
// forgotten once the gateway has accepted the agent's own DELETE of it, or has answered that it
// no longer knows it.

// Limits of the session bookkeeping.
const (
	// maxMCPSessions bounds the sessions one run may hold open at the gateway. Claude Code opens
	// one per configured server and a new one after a lost connection; an agent that opens them
	// in a loop is refused past this bound, with a JSON-RPC error and a log record, rather than
	// having an old session forgotten (which would leak it) or closed under it.
	maxMCPSessions = 32
	// mcpCloseTimeout bounds closing every session at stop, all concurrently: it must fit, with
	// the rest of netd's shutdown, in the 5 s abox gives `docker stop`.
	mcpCloseTimeout = 2 * time.Second
	// maxSessionID bounds a session id netd remembers; the MCP specification allows only visible
	// ASCII in it.
	maxSessionID = 256
	// initializeTimeout bounds an initialize netd forwards. It is not cut short when the agent
	// hangs up: the gateway may have opened the session already, and netd must read its id.
	initializeTimeout = 30 * time.Second
)

// Reasons of the session records in mcp.jsonl.
const (
	reasonSessionLimit = "too many MCP sessions open: the agent must close one (DELETE) before it opens another"
	reasonStopping     = "netd is stopping: no new MCP sessions"
	reasonClosed       = "netd closed the session at stop: the agent left it open"
)

var (
	errSessionLimit = errors.New(reasonSessionLimit)
	errStopping     = errors.New(reasonStopping)
)

// mcpSession is one session the gateway opened through the forwarder: its id and the URL of the
// gateway that issued it.
type mcpSession struct {
	id, upstream string
}

// mcpSessions is the forwarder's record of open sessions. It is safe for concurrent use, and its
// zero value holds up to maxMCPSessions.
type mcpSessions struct {
	limit int // 0: maxMCPSessions

	mu       sync.Mutex
	open     []mcpSession  // in the order the gateway issued them
	pending  int           // initializes forwarded whose answer has not arrived
	stopping bool          // drain began: no new initializes
	settled  chan struct{} // made by drain, closed once nothing is pending
	drained  bool          // drain handed the open sessions over
}

// sessionTrack is what one forwarded request does to the record once the gateway answers.
type sessionTrack struct {
	s        *mcpSessions
	opening  bool   // an initialize without a session id: it may open one
	id       string // the request's session id
	deleting bool   // the agent's DELETE of id
	upstream string
}

// track classifies a request about to be forwarded to upstream. An initialize without a session
// id reserves a place under the bound, refused with errSessionLimit or errStopping; the caller
// must then call answered exactly once.
func (s *mcpSessions) track(r *http.Request, msgs []rpcMessage, upstream string) (sessionTrack, error) {
	t := sessionTrack{s: s, id: r.Header.Get("Mcp-Session-Id"), deleting: r.Method == http.MethodDelete, upstream: upstream}
	if r.Method != http.MethodPost || t.id != "" || !slices.ContainsFunc(msgs, func(m rpcMessage) bool { return m.method == "initialize" }) {
		return t, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopping:
		return t, errStopping
	case len(s.open)+s.pending >= cmp.Or(s.limit, maxMCPSessions):
		return t, errSessionLimit
	}
	s.pending++
	t.opening = true
	return t, nil
}

// context is the context to forward the request with: the agent's, except for an initialize,
// which the agent cannot cancel, so that netd always learns the session it may open.
func (t sessionTrack) context(agent context.Context) (context.Context, context.CancelFunc) {
	if !t.opening {
		return agent, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(agent), initializeTimeout)
}

// answered applies the gateway's answer (nil if the request failed) and returns a problem worth
// a log record, or "": a session the gateway opened that netd could not remember stays open.
func (t sessionTrack) answered(resp *http.Response) string {
	ok := resp != nil && resp.StatusCode/100 == 2
	gone := resp != nil && resp.StatusCode == http.StatusNotFound
	switch {
	case t.opening:
		id := ""
		if ok {
			id = resp.Header.Get("Mcp-Session-Id")
		}
		return t.s.settle(id, t.upstream)
	case t.id == "":
	case t.deleting && ok, gone:
		t.s.forget(t.id, t.upstream)
	}
	return ""
}

// settle ends a pending initialize, remembering the session the gateway opened, if any.
func (s *mcpSessions) settle(id, upstream string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	defer s.checkSettled()
	switch {
	case id == "":
		return ""
	case !validSessionID(id):
		return "the gateway issued a session id netd cannot use; the session stays open at the gateway"
	case s.drained:
		return "the gateway answered an initialize after netd's closing deadline; the session stays open at the gateway"
	}
	sess := mcpSession{id, upstream}
	if !slices.Contains(s.open, sess) {
		s.open = append(s.open, sess)
	}
	return ""
}

// checkSettled signals drain once nothing is pending any more; s.mu is held.
func (s *mcpSessions) checkSettled() {
	if s.settled == nil || s.pending > 0 {
		return
	}
	select {
	case <-s.settled:
	default:
		close(s.settled)
	}
}

func (s *mcpSessions) forget(id, upstream string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = slices.DeleteFunc(s.open, func(o mcpSession) bool { return o == mcpSession{id, upstream} })
}

// drain refuses every new session, waits up to wait (or ctx's end) for the gateway's answer to
// each initialize in flight, and hands over the open sessions, forgetting them. The wait is
// bounded apart from ctx so that a slow initialize leaves time to close the others.
func (s *mcpSessions) drain(ctx context.Context, wait time.Duration) []mcpSession {
	s.mu.Lock()
	if !s.stopping {
		s.stopping, s.settled = true, make(chan struct{})
	}
	settled := s.settled
	s.checkSettled()
	s.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-settled:
	case <-timer.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	open := s.open
	s.open, s.drained = nil, true
	return open
}

// validSessionID accepts what the MCP specification allows: 1 to maxSessionID visible ASCII
// characters.
func validSessionID(id string) bool {
	if id == "" || len(id) > maxSessionID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// refuseSession answers a body holding an initialize netd does not forward with a JSON-RPC
// error per request, and logs each message.
func (f *mcpForwarder) refuseSession(w http.ResponseWriter, body []byte, msgs []rpcMessage, start time.Time, err error) {
	refused := map[int]rpcRefusal{}
	for i := range msgs {
		refused[i] = rpcRefusal{refusedToolCode, policy.Denied, err.Error()}
	}
	batch := bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("["))
	f.refuseCalls(w, msgs, batch, refused, start)
}

// closeSessions closes at the gateway, concurrently and within timeout, every session the agent
// left open, and logs each close in mcp.jsonl. The serving child calls it when it stops, while
// the supervisor still answers the dialer's set requests.
func (f *mcpForwarder) closeSessions(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	open := f.sessions.drain(ctx, timeout/4)
	token := f.cfg.get().token
	var wg sync.WaitGroup
	for _, s := range open {
		wg.Go(func() { f.closeSession(ctx, s, token) })
	}
	wg.Wait()
}

// closeSession DELETEs one session with the gateway token and logs the outcome.
func (f *mcpForwarder) closeSession(ctx context.Context, s mcpSession, token string) {
	start := f.now()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.upstream, nil)
	if err != nil {
		f.logOne(start, http.MethodDelete, policy.Error, reasonClosed+": "+err.Error(), 0)
		return
	}
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := f.client.Do(req)
	if err != nil {
		f.logOne(start, http.MethodDelete, policy.Error, reasonClosed+": gateway: "+err.Error(), 0)
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		f.logOne(start, http.MethodDelete, policy.Error, fmt.Sprintf("%s: the gateway answered %s", reasonClosed, resp.Status), resp.StatusCode)
		return
	}
	f.logOne(start, http.MethodDelete, policy.Allowed, reasonClosed, resp.StatusCode)
}

// statusOf is resp's status code, 0 without a response.
func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}
