package netd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/policy"
)

// httpProxy receives every tcp/80 connection of every uid but netd's and decides each request on
// its Host: a kept-alive connection cannot switch to another host after the first request was
// allowed. An allowed request is forwarded to an address netd resolved itself.
type httpProxy struct {
	cfg  *current
	log  *jsonl
	rp   *httputil.ReverseProxy
	tr   *http.Transport
	now  func() time.Time
	port int // the upstream port: 80

	mu       sync.Mutex
	inflight map[*target]context.CancelFunc // requests being forwarded, for [httpProxy.revoke]
}

// target is what the handler decided, passed to the reverse proxy through the context, and what
// the proxy saw, for the log.
type target struct {
	name    string
	down    atomic.Int64
	revoked atomic.Bool // cut by a reload that no longer allows name

	mu       sync.Mutex
	upstream string // the address netd connected to
	failure  string // why forwarding failed
}

func (t *target) seen(upstream, failure string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.upstream = cmp.Or(t.upstream, upstream)
	t.failure = cmp.Or(t.failure, failure)
}

type targetKey struct{}

func newHTTPProxy(cfg *current, dial *upstreamDialer, log *jsonl, port int) *httpProxy {
	p := &httpProxy{cfg: cfg, log: log, now: time.Now, port: port, inflight: map[*target]context.CancelFunc{}}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			return dial.dial(ctx, host, p.port)
		},
		Proxy:               nil,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	p.tr = tr
	p.rp = &httputil.ReverseProxy{
		Rewrite:        rewrite,
		Transport:      tr,
		ModifyResponse: countResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			r.Context().Value(targetKey{}).(*target).seen("", err.Error())
			http.Error(w, "abox: upstream unreachable", http.StatusBadGateway)
		},
	}
	return p
}

// ServeHTTP decides one request and forwards or refuses it.
func (p *httpProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := p.now()
	rec := policy.ConnRecord{TS: policy.Timestamp(start), Kind: policy.KindHTTP, Port: 80}
	defer func() {
		rec.DurMS = since(start)
		p.log.write(rec)
	}()
	name, reason := p.decide(r)
	rec.Name = logName(r.Host)
	rec.OrigDst, _ = r.Context().Value(origDstKey{}).(string)
	if reason != "" {
		rec.Verdict, rec.Reason = policy.Denied, reason
		http.Error(w, "abox: "+reason, http.StatusForbidden)
		return
	}
	up := &countingBody{ReadCloser: r.Body}
	r.Body = up
	t := &target{name: name}
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), targetKey{}, t))
	defer p.track(t, cancel)()
	p.forward(w, r.WithContext(ctx))
	t.mu.Lock()
	rec.Verdict, rec.Upstream = policy.Allowed, t.upstream
	switch {
	case t.revoked.Load():
		rec.Reason = "cut: " + name + " is no longer allowed on port 80"
	case t.failure != "":
		rec.Verdict, rec.Reason = policy.Error, t.failure
	}
	t.mu.Unlock()
	rec.BytesUp, rec.BytesDown = up.n.Load(), t.down.Load()
}

// forward relays one allowed request. A request cut by [httpProxy.revoke] makes the reverse
// proxy abort the handler (http.ErrAbortHandler), which closes the agent's connection; that is
// the intended end here, not a crash.
func (p *httpProxy) forward(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			panic(v)
		}
	}()
	p.rp.ServeHTTP(w, r)
}

// track registers an in-flight request; the returned function unregisters it.
func (p *httpProxy) track(t *target, cancel context.CancelFunc) func() {
	p.mu.Lock()
	p.inflight[t] = cancel
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.inflight, t)
		p.mu.Unlock()
		cancel()
	}
}

// revoke cuts every request in flight to a name the current policy no longer allows on port 80
// (`abox egress rm` of it), as the TLS proxy closes its tunnels, and drops the idle upstream
// connections, so that nothing of the name outlives the reload. It returns how many it cut.
func (p *httpProxy) revoke() int {
	list := p.cfg.get().list
	p.mu.Lock()
	n := 0
	for t, cancel := range p.inflight {
		if !list.Allows(t.name, 80) { // decided on 80, as decide does; p.port is only where netd connects
			t.revoked.Store(true)
			cancel()
			n++
		}
	}
	p.mu.Unlock()
	p.tr.CloseIdleConnections()
	return n
}

// decide returns the canonical host of an allowed request, or why it is refused.
func (p *httpProxy) decide(r *http.Request) (name, reason string) {
	if r.Method == http.MethodConnect {
		return "", "CONNECT is not proxied"
	}
	host, port := r.Host, ""
	if h, ps, err := net.SplitHostPort(r.Host); err == nil {
		host, port = h, ps
	}
	if port != "" && port != "80" {
		return "", "port " + port + " in Host is not 80"
	}
	name, ok := egress.NormalizeName(host)
	if !ok {
		return "", fmt.Sprintf("%q is not a host name", host)
	}
	if !p.cfg.get().list.Allows(name, 80) {
		return "", name + " is not allowed on port 80"
	}
	return name, ""
}

// rewrite sends the request to the decided host over plain HTTP; nothing about the agent (its
// address, forwarding headers) is added.
func rewrite(pr *httputil.ProxyRequest) {
	t := pr.In.Context().Value(targetKey{}).(*target)
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = t.name
	pr.Out.Host = t.name
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		t.seen(info.Conn.RemoteAddr().String(), "")
	}}
	*pr.Out = *pr.Out.WithContext(httptrace.WithClientTrace(pr.Out.Context(), trace))
}

// countResponse counts the bytes of the response body into the request's target.
func countResponse(resp *http.Response) error {
	t := resp.Request.Context().Value(targetKey{}).(*target)
	resp.Body = &countingBody{ReadCloser: resp.Body, into: &t.down}
	return nil
}

// countingBody counts what is read through it, into its own counter or into.
type countingBody struct {
	io.ReadCloser
	n    atomic.Int64
	into *atomic.Int64
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	if c.into != nil {
		c.into.Add(int64(n))
	}
	return n, err
}

// origDstKey holds, in a request's context, where the agent aimed its connection.
type origDstKey struct{}

// withOrigDst is an http.Server ConnContext that records a connection's original destination
// for the log. The connection is the bounded listener's ([slotConn]); the socket is beneath it.
func withOrigDst(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := tcpConn(c); ok {
		return context.WithValue(ctx, origDstKey{}, originalDst(tc))
	}
	return ctx
}

// newHTTPServer returns the server for a loopback proxy or forwarder handler.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeader,
	}
}
