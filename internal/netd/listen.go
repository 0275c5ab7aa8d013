package netd

import (
	"net"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// Every listener of netd's serving child is the agent's to connect to, as often as it likes,
// and each connection it holds costs netd a goroutine and its buffers, whether it sends a
// request or not. A flood of idle keep-alive connections to the model forwarder once took the
// child past its memory limit: the kernel ended it, and the run with it, its counters and its
// in-flight requests unrecorded. So each listener holds at most so many connections at once
// ([boundedListener]); past that it resets what it accepts at once, and the refusal goes to the
// decision log like any other (aggregated, and counted past the log's cap). The TLS proxy has
// its own bound, [maxProxyConns].
//
// The bounds leave room for what a real client does: a package manager opens tens of
// connections through the HTTP proxy at once, Claude Code a handful to the model API and to
// the MCP forwarder, a resolver a few over TCP. They also keep the worst case well under the
// child's memory: 512 idle connections of some 30 KiB each (a goroutine and its buffers, the
// headers bounded by [httpMaxHeader]) are 15 MiB, beside the forwarder's 64 MiB of bodies.
const (
	maxHTTPConns   = 256
	maxMCPConns    = 64
	maxModelConns  = 64
	maxDNSTCPConns = 128
)

// Timeouts of the loopback HTTP servers (the proxy and both forwarders): an idle keep-alive
// connection and a request's headers each get so long. A slow body is not timed out (a large
// upload through the proxy may take a while): it holds one of the listener's slots.
const (
	httpHeaderTimeout = 10 * time.Second
	httpIdleTimeout   = 30 * time.Second
	httpMaxHeader     = 64 << 10
)

// boundedListener accepts at most cap(slots) connections at a time. A connection accepted
// past that is reset and logged as refused ([reasonTooMany]); the caller never sees it.
type boundedListener struct {
	net.Listener
	slots chan struct{}
	log   *jsonl
	kind  string // the conn log's kind for a refusal
	port  int
	now   func() time.Time
}

// bound wraps ln so that it holds at most max connections at once.
func bound(ln net.Listener, max int, log *jsonl, kind string, port int) net.Listener {
	return &boundedListener{Listener: ln, slots: make(chan struct{}, max), log: log, kind: kind, port: port, now: time.Now}
}

// Accept returns the next connection there is a slot for.
func (l *boundedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
		}
		if tc, ok := c.(*net.TCPConn); ok {
			reset(tc)
		} else {
			c.Close()
		}
		l.log.write(policy.ConnRecord{TS: policy.Timestamp(l.now()), Kind: l.kind, Port: l.port,
			Verdict: policy.Denied, Reason: reasonTooMany})
	}
}

// slotConn gives its listener's slot back when it is closed, once.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// NetConn returns the connection beneath, as [crypto/tls.Conn.NetConn] does.
func (c *slotConn) NetConn() net.Conn { return c.Conn }

// tcpConn returns the TCP socket of c, looking beneath the wrappers that say where theirs is
// (a NetConn method): the socket's options (the original destination) are read there.
func tcpConn(c net.Conn) (*net.TCPConn, bool) {
	for {
		switch w := c.(type) {
		case *net.TCPConn:
			return w, true
		case interface{ NetConn() net.Conn }:
			c = w.NetConn()
		default:
			return nil, false
		}
	}
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
