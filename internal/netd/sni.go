package netd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/policy"
)

// sniProxy receives every tcp/443 connection of every uid but netd's (the ruleset redirects them
// here) and decides on the server name of the ClientHello, without terminating TLS. An allowed
// connection goes to an address netd resolved itself for that name, so a shared CDN address,
// or whatever address the agent aimed at, grants nothing. A refused one is reset.
type sniProxy struct {
	cfg          *current
	dial         *upstreamDialer
	log          *jsonl
	port         int           // the upstream port: 443
	helloTimeout time.Duration // to receive the whole ClientHello
	slots        chan struct{} // bounds concurrent connections
	now          func() time.Time

	mu      sync.Mutex
	tunnels map[*net.TCPConn]*tunnel // connections being relayed
}

// tunnel is a connection being relayed, kept so that a reload can close it.
type tunnel struct {
	name    string
	up      net.Conn
	revoked atomic.Bool
}

// reasonRevoked is logged for a connection closed because the allowlist no longer has its name.
const reasonRevoked = "closed: no longer allowed"

// Defaults of [sniProxy].
const (
	helloTimeout   = 10 * time.Second
	maxProxyConns  = 2048
	acceptBackoff  = 50 * time.Millisecond
	reasonTooMany  = "too many connections"
	reasonNoSNI    = "no sni"
	reasonNotAllow = "not allowed"
)

// refusal is why a connection was not proxied, with its verdict: denied by policy, or an error
// on netd's side.
type refusal struct {
	verdict, reason string
}

func (r *refusal) Error() string { return r.reason }

func denied(reason string) *refusal { return &refusal{policy.Denied, reason} }

// serve accepts connections until ln is closed.
func (p *sniProxy) serve(ln net.Listener) error {
	return acceptLoop(ln, func(c *net.TCPConn) {
		select {
		case p.slots <- struct{}{}:
			go func() {
				defer func() { <-p.slots }()
				p.handle(c)
			}()
		default:
			p.log.write(policy.ConnRecord{TS: policy.Timestamp(p.now()), Kind: policy.KindTLS, Port: 443,
				Verdict: policy.Denied, Reason: reasonTooMany})
			reset(c)
		}
	})
}

// acceptLoop hands each accepted TCP connection to handle, until ln is closed. Temporary
// failures (such as running out of file descriptors) are retried after a pause.
func acceptLoop(ln net.Listener, handle func(*net.TCPConn)) error {
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			time.Sleep(acceptBackoff)
			continue
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			c.Close()
			continue
		}
		handle(tc)
	}
}

// handle proxies or refuses one connection and logs it.
func (p *sniProxy) handle(c *net.TCPConn) {
	start := p.now()
	rec := policy.ConnRecord{TS: policy.Timestamp(start), Kind: policy.KindTLS, Port: 443, OrigDst: originalDst(c)}
	defer func() {
		rec.DurMS = since(start)
		p.log.write(rec)
	}()
	up, hello, name, err := p.open(c, &rec)
	if err != nil {
		var r *refusal
		if !errors.As(err, &r) {
			r = &refusal{policy.Error, err.Error()}
		}
		rec.Verdict, rec.Reason = r.verdict, r.reason
		reset(c)
		return
	}
	rec.Verdict = policy.Allowed
	t := &tunnel{name: name, up: up}
	defer p.track(c, t)()
	rec.BytesUp, rec.BytesDown = relay(c, up, hello)
	if t.revoked.Load() {
		rec.Reason = reasonRevoked
	}
}

// track registers a tunnel until the returned func is called. A reload that happened while the
// tunnel was being opened is caught here: its name is checked against the current policy.
func (p *sniProxy) track(c *net.TCPConn, t *tunnel) (untrack func()) {
	p.mu.Lock()
	if p.tunnels == nil {
		p.tunnels = map[*net.TCPConn]*tunnel{}
	}
	p.tunnels[c] = t
	p.mu.Unlock()
	if !p.cfg.get().list.Allows(t.name, 443) {
		t.close(c)
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.tunnels, c)
	}
}

// revoke closes every tunnel whose name the current policy no longer allows on 443, so that
// `abox egress rm` ends open connections as well as new ones. It returns how many it closed.
func (p *sniProxy) revoke() int {
	list := p.cfg.get().list
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c, t := range p.tunnels {
		if !list.Allows(t.name, 443) {
			t.close(c)
			n++
		}
	}
	return n
}

func (t *tunnel) close(agent *net.TCPConn) {
	t.revoked.Store(true)
	agent.Close()
	t.up.Close()
}

// open reads the ClientHello, decides, and connects upstream. It returns the upstream connection,
// the bytes to replay to it and the canonical name it was opened for.
func (p *sniProxy) open(c *net.TCPConn, rec *policy.ConnRecord) (up net.Conn, hello []byte, name string, err error) {
	c.SetReadDeadline(p.now().Add(p.helloTimeout))
	raw, name, err := p.readDecision(c, rec)
	if err != nil {
		return nil, nil, "", err
	}
	up, err = p.dial.dial(context.Background(), name, p.port)
	if err != nil {
		return nil, nil, "", &refusal{policy.Error, err.Error()}
	}
	rec.Upstream = up.RemoteAddr().String()
	c.SetReadDeadline(time.Time{})
	return up, raw, name, nil
}

// readDecision reads one ClientHello from r and decides on its server name, which it puts in
// rec. It returns the bytes read (to replay upstream) and the canonical name to connect to, or a
// [refusal]. Anything but a well-formed hello naming an allowed host, without an encrypted
// ClientHello, is refused.
func (p *sniProxy) readDecision(r io.Reader, rec *policy.ConnRecord) (raw []byte, name string, err error) {
	raw, msg, err := readClientHello(r)
	if err != nil {
		return raw, "", denied(err.Error())
	}
	hello, err := parseClientHello(msg)
	if err != nil {
		return raw, "", denied(err.Error())
	}
	rec.Name = logName(hello.serverName)
	if hello.ech != 0 {
		// The server would read the name inside the encrypted hello, not this one.
		return raw, "", denied(policy.ReasonECH)
	}
	name, err = p.decide(hello.serverName)
	return raw, name, err
}

// decide returns the canonical name to connect to, or why the server name is refused.
func (p *sniProxy) decide(sni string) (string, error) {
	if sni == "" {
		return "", denied(reasonNoSNI)
	}
	name, ok := egress.NormalizeName(sni)
	if !ok {
		return "", denied("invalid sni")
	}
	list := p.cfg.get().list
	if list.Allows(name, 443) {
		return name, nil
	}
	if ports := list.Ports(name); len(ports) > 0 {
		return "", denied(fmt.Sprintf("allowed only on port %s", joinPorts(ports)))
	}
	return "", denied(reasonNotAllow)
}

func joinPorts(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}

// relay writes hello upstream, then copies both ways until both sides are done, passing on
// half-closes. It returns the bytes sent each way.
func relay(agent *net.TCPConn, up net.Conn, hello []byte) (bytesUp, bytesDown int64) {
	defer agent.Close()
	defer up.Close()
	n, err := up.Write(hello)
	bytesUp = int64(n)
	if err != nil {
		return bytesUp, 0
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n, err := io.Copy(up, agent)
		bytesUp += n
		finish(up, agent, err)
	}()
	bytesDown, err = io.Copy(agent, up)
	finish(agent, up, err)
	wg.Wait()
	return bytesUp, bytesDown
}

// finish ends one direction of a relay: a clean end is passed on as a half-close of dst; an
// error tears down both connections, so the other direction stops too.
func finish(dst, src net.Conn, err error) {
	if err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	dst.Close()
}

// reset closes c with a TCP RST, so that a refused client fails at once.
func reset(c *net.TCPConn) {
	c.SetLinger(0)
	c.Close()
}
