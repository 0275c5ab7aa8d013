package netd

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// fakeDNS resolves names from a map.
type fakeDNS map[string][]netip.Addr

func (f fakeDNS) lookupA(_ context.Context, name string) ([]netip.Addr, time.Duration, error) {
	if a, ok := f[name]; ok {
		return a, 45 * time.Second, nil
	}
	return nil, 0, fmt.Errorf("resolving %s: NXDOMAIN", name)
}

var loopback = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

type sniFixture struct {
	addr string
	log  *syncBuffer
	sets *fakeSets
	p    *sniProxy
}

// startSNI runs an SNI proxy on loopback whose upstreams are at port upPort of the addresses
// dns gives.
func startSNI(t testing.TB, upPort int, dns fakeDNS, hello time.Duration, slots int) *sniFixture {
	t.Helper()
	f := &sniFixture{log: &syncBuffer{}, sets: &fakeSets{}}
	p := &sniProxy{
		cfg:          testConfig(t, []string{"api.example.com", "example.com", "*.example.org", "git.example.com:22", "gone.example.com"}, nil, ""),
		dial:         &upstreamDialer{res: dns, sets: f.sets, timeout: 2 * time.Second},
		log:          newJSONL(f.log, maxLogBytes),
		port:         upPort,
		helloTimeout: hello,
		slots:        make(chan struct{}, slots),
		now:          time.Now,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.serve(ln)
	t.Cleanup(func() { ln.Close() })
	f.addr, f.p = ln.Addr().String(), p
	return f
}

func tlsUpstream(t *testing.T) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.TLS.ServerName)
	}))
	t.Cleanup(srv.Close)
	return srv, srv.Listener.Addr().(*net.TCPAddr).Port
}

// getVia makes an HTTPS request for serverName through the proxy at addr.
func getVia(addr, serverName string, cfg *tls.Config) (string, error) {
	if cfg == nil {
		cfg = &tls.Config{InsecureSkipVerify: true}
	}
	cfg.ServerName = serverName
	tr := &http.Transport{
		DialContext:     func(ctx context.Context, _, _ string) (net.Conn, error) { return net.Dial("tcp", addr) },
		TLSClientConfig: cfg,
	}
	defer tr.CloseIdleConnections()
	host := serverName
	if host == "" {
		host = "127.0.0.1"
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + host + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestSNIProxy(t *testing.T) {
	_, port := tlsUpstream(t)
	dns := fakeDNS{"api.example.com": loopback, "example.com": loopback, "a.example.org": loopback, "git.example.com": loopback}
	tests := []struct {
		name, sni string
		verdict   string
		reason    string
	}{
		{"allowed", "api.example.com", policy.Allowed, ""},
		{"allowed, upper case", "API.Example.COM", policy.Allowed, ""},
		{"wildcard", "a.example.org", policy.Allowed, ""},
		{"denied", "evil.example.com", policy.Denied, "not allowed"},
		{"wildcard apex", "example.org", policy.Denied, "not allowed"},
		{"no sni", "", policy.Denied, "no sni"},
		{"allowed on another port only", "git.example.com", policy.Denied, "allowed only on port 22"},
		{"does not resolve", "gone.example.com", policy.Error, "NXDOMAIN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startSNI(t, port, dns, time.Second, 8)
			body, err := getVia(f.addr, tc.sni, nil)
			if tc.verdict == policy.Allowed {
				if err != nil || body != "hello "+tc.sni {
					t.Errorf("GET via proxy = %q, %v; want the upstream's answer", body, err)
				}
			} else if err == nil {
				t.Errorf("GET via proxy for %q succeeded: %q", tc.sni, body)
			}
			r := waitRecords[policy.ConnRecord](t, f.log, 1)[0]
			if r.Verdict != tc.verdict || !strings.Contains(r.Reason, tc.reason) || r.Kind != policy.KindTLS || r.Port != 443 {
				t.Errorf("logged %+v, want verdict %s, reason %q", r, tc.verdict, tc.reason)
			}
			if tc.verdict == policy.Allowed && (r.BytesUp == 0 || r.BytesDown == 0 || r.Upstream != fmt.Sprintf("127.0.0.1:%d", port)) {
				t.Errorf("logged %+v, want byte counts and the upstream netd chose", r)
			}
		})
	}
}

func TestSNIProxyVerifiesEndToEnd(t *testing.T) {
	srv, port := tlsUpstream(t)
	f := startSNI(t, port, fakeDNS{"example.com": loopback}, time.Second, 8)
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	if body, err := getVia(f.addr, "example.com", cfg); err != nil || body != "hello example.com" {
		t.Errorf("verified GET = %q, %v", body, err)
	}
}

// TestSNIProxyOpensWhatItResolved: netd dials the addresses it resolved, in order, and opens
// each only as it tries it: the first (loopback, here) answers, so the second is neither opened
// nor dialed.
func TestSNIProxyOpensWhatItResolved(t *testing.T) {
	_, port := tlsUpstream(t)
	other := netip.MustParseAddr("192.0.2.7") // listed after loopback: never dialed
	f := startSNI(t, port, fakeDNS{"api.example.com": {loopback[0], other}}, time.Second, 8)
	if _, err := getVia(f.addr, "api.example.com", nil); err != nil {
		t.Fatal(err)
	}
	if got := f.sets.requests(); len(got) != 0 {
		t.Errorf("set requests = %v, want none: loopback is not opened and %v was never tried", got, other)
	}
}

func TestSNIProxyResets(t *testing.T) {
	f := startSNI(t, 1, fakeDNS{}, 300*time.Millisecond, 8)
	for _, tc := range []struct{ name, send, reason string }{
		{"denied name", string(realHello(t, "evil.example.com")), "not allowed"},
		{"plain http", "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n", "not a tls handshake"},
		{"silent client", "", "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tc.send)
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("read after refusal: %v, want a connection reset", err)
			}
		})
	}
	var reasons []string
	for _, r := range waitRecords[policy.ConnRecord](t, f.log, 3) {
		reasons = append(reasons, r.Reason)
	}
	got := strings.Join(reasons, "|")
	for _, want := range []string{"not allowed", "not a tls handshake", "timeout"} {
		if !strings.Contains(got, want) {
			t.Errorf("logged reasons %q, want one with %q", reasons, want)
		}
	}
}

// TestSNIProxyHalfClose sends a hello and data, half-closes, and expects the upstream's reply,
// which it sends only after reading EOF.
func TestSNIProxyHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		got <- len(b)
		io.WriteString(c, "bye")
		c.Close()
	}()
	f := startSNI(t, ln.Addr().(*net.TCPAddr).Port, fakeDNS{"api.example.com": loopback}, time.Second, 8)
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	hello := realHello(t, "api.example.com")
	c.Write(append(hello, "payload"...))
	c.(*net.TCPConn).CloseWrite()
	reply, err := io.ReadAll(c)
	if string(reply) != "bye" || err != nil {
		t.Errorf("reply = %q, %v; want bye", reply, err)
	}
	if n := <-got; n != len(hello)+len("payload") {
		t.Errorf("upstream read %d bytes, want %d", n, len(hello)+len("payload"))
	}
	r := waitRecords[policy.ConnRecord](t, f.log, 1)[0]
	if r.BytesUp != int64(len(hello)+7) || r.BytesDown != 3 {
		t.Errorf("logged %d up, %d down; want %d, 3", r.BytesUp, r.BytesDown, len(hello)+7)
	}
}

func TestSNIProxyBoundsConnections(t *testing.T) {
	f := startSNI(t, 1, fakeDNS{}, 2*time.Second, 1)
	hold, err := net.Dial("tcp", f.addr) // takes the only slot, waiting for a hello
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	time.Sleep(100 * time.Millisecond)
	c, err := net.Dial("tcp", f.addr)
	if err == nil { // on loopback the reset may already fail the dial
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("second connection: %v, want a reset", err)
	}
	if r := waitRecords[policy.ConnRecord](t, f.log, 1)[0]; r.Reason != reasonTooMany {
		t.Errorf("logged %+v, want %q", r, reasonTooMany)
	}
}

// TestSNIProxyRevokesOpenTunnels: a reload that removes a name closes the tunnels open to it, and
// only those.
func TestSNIProxyRevokesOpenTunnels(t *testing.T) {
	_, port := tlsUpstream(t)
	f := startSNI(t, port, fakeDNS{"api.example.com": loopback, "example.com": loopback}, time.Second, 8)
	dial := func(name string) *tls.Conn {
		t.Helper()
		c, err := tls.Dial("tcp", f.addr, &tls.Config{ServerName: name, InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("tunnel to %s: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	gone, kept := dial("api.example.com"), dial("example.com")
	waitFor(t, func() bool { f.p.mu.Lock(); defer f.p.mu.Unlock(); return len(f.p.tunnels) == 2 })
	f.p.cfg.set(testConfig(t, []string{"example.com"}, nil, "").get())
	if n := f.p.revoke(); n != 1 {
		t.Errorf("revoke closed %d tunnels, want 1", n)
	}
	gone.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := gone.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read on the revoked tunnel = %v, want it closed", err)
	}
	fmt.Fprintf(kept, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
	kept.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(kept).ReadString('\n'); err != nil || !strings.Contains(line, "200") {
		t.Errorf("the kept tunnel answered %q, %v", line, err)
	}
	r := waitRecords[policy.ConnRecord](t, f.log, 1)[0]
	if r.Name != "api.example.com" || r.Verdict != policy.Allowed || r.Reason != reasonRevoked {
		t.Errorf("logged %+v, want the revoked tunnel with reason %q", r, reasonRevoked)
	}
}
