package netd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

type httpFixture struct {
	addr     string
	log      *syncBuffer
	sets     *fakeSets
	upstream *httptest.Server
}

func startHTTPProxy(t *testing.T) *httpFixture {
	t.Helper()
	f := &httpFixture{log: &syncBuffer{}, sets: &fakeSets{}}
	f.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s path=%s xff=%q", r.Host, r.URL.Path, r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(f.upstream.Close)
	port := f.upstream.Listener.Addr().(*net.TCPAddr).Port
	dns := fakeDNS{"web.example.com": loopback, "a.example.org": loopback}
	cfg := testConfig(t, []string{"web.example.com:80", "api.example.com", "*.example.org:80", "gone.example.org:80"}, nil, "")
	p := newHTTPProxy(cfg, &upstreamDialer{res: dns, sets: f.sets, timeout: 2 * time.Second}, newJSONL(f.log, maxLogBytes), port)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	f.addr = srv.Listener.Addr().String()
	return f
}

// client sends every request to the proxy, whatever its URL says, over kept-alive connections.
func (f *httpFixture) client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return net.Dial("tcp", f.addr) },
	}}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPProxyDecidesOnHost(t *testing.T) {
	tests := []struct {
		url      string
		status   int
		wantHost string // the Host the upstream sees
		reason   string
	}{
		{"http://web.example.com/x", 200, "web.example.com", ""},
		{"http://WEB.example.com:80/x", 200, "web.example.com", ""},
		{"http://a.example.org/x", 200, "a.example.org", ""},
		{"http://api.example.com/", 403, "", "not allowed on port 80"},
		{"http://evil.example.com/", 403, "", "not allowed on port 80"},
		{"http://web.example.com:8080/", 403, "", "port 8080"},
		{"http://127.0.0.1/", 403, "", "not a host name"},
		{"http://gone.example.org/", 502, "", "NXDOMAIN"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			f := startHTTPProxy(t)
			status, body := get(t, f.client(), tc.url)
			if status != tc.status {
				t.Fatalf("status = %d (%s), want %d", status, body, tc.status)
			}
			if want := `host=` + tc.wantHost + ` path=/x xff=""`; status == 200 && body != want {
				t.Errorf("upstream saw %q, want %q", body, want)
			}
			r := waitRecords[policy.ConnRecord](t, f.log, 1)[0]
			if r.Kind != policy.KindHTTP || r.Port != 80 || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("logged %+v, want reason %q", r, tc.reason)
			}
			if status == 200 && (r.Verdict != policy.Allowed || r.Upstream != f.upstream.Listener.Addr().String() || r.BytesDown == 0) {
				t.Errorf("logged %+v, want allowed with upstream and bytes", r)
			}
		})
	}
}

// TestHTTPProxyChecksEveryKeptAliveRequest changes the Host on one connection.
func TestHTTPProxyChecksEveryKeptAliveRequest(t *testing.T) {
	f := startHTTPProxy(t)
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, s := range []struct {
		host   string
		status int
	}{{"web.example.com", 200}, {"evil.example.com", 403}, {"web.example.com", 200}} {
		fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: %s\r\n\r\n", i, s.host)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != s.status || resp.Close {
			t.Errorf("request %d to %s: %d (close %v), want %d on a kept-alive connection", i, s.host, resp.StatusCode, resp.Close, s.status)
		}
	}
	recs := waitRecords[policy.ConnRecord](t, f.log, 3)
	if recs[1].Verdict != policy.Denied || recs[1].Name != "evil.example.com" {
		t.Errorf("second request logged %+v, want denied evil.example.com", recs[1])
	}
}

// TestHTTPProxyRawRequests sends what a client library would not: an absolute URI naming another
// host than the Host header, and CONNECT.
func TestHTTPProxyRawRequests(t *testing.T) {
	f := startHTTPProxy(t)
	for _, raw := range []string{
		"GET http://evil.example.com/ HTTP/1.1\r\nHost: web.example.com\r\n\r\n",
		"CONNECT web.example.com:80 HTTP/1.1\r\nHost: web.example.com:80\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
	} {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, raw)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 403 {
			t.Errorf("%q: %v, %v; want 403", raw, resp, err)
		}
		c.Close()
	}
}

// TestHTTPProxyRevokesInFlight: a download in progress through the HTTP proxy, to a name a
// reload no longer allows on port 80, is cut at once (as `abox egress rm` cuts TLS tunnels);
// one to a name still allowed runs on; the log says which was cut.
func TestHTTPProxyRevokesInFlight(t *testing.T) {
	log := &syncBuffer{}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 40; i++ { // 4 s of a slow download
			fmt.Fprintf(w, "chunk %d\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(upstream.Close)
	port := upstream.Listener.Addr().(*net.TCPAddr).Port
	dns := fakeDNS{"gone.example.com": loopback, "kept.example.com": loopback}
	cfg := testConfig(t, []string{"gone.example.com:80", "kept.example.com:80"}, nil, "")
	p := newHTTPProxy(cfg, &upstreamDialer{res: dns, sets: &fakeSets{}, timeout: 2 * time.Second}, newJSONL(log, maxLogBytes), port)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	f := &httpFixture{addr: srv.Listener.Addr().String()}
	type result struct {
		chunks int
		err    error
		took   time.Duration
	}
	download := func(host string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			start := time.Now()
			resp, err := f.client().Get("http://" + host + "/slow")
			if err != nil {
				ch <- result{err: err}
				return
			}
			defer resp.Body.Close()
			n := 0
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				n++
			}
			ch <- result{chunks: n, err: sc.Err(), took: time.Since(start)}
		}()
		return ch
	}
	gone, kept := download("gone.example.com"), download("kept.example.com")
	time.Sleep(500 * time.Millisecond)
	cfg.set(testConfig(t, []string{"kept.example.com:80"}, nil, "").get())
	if n := p.revoke(); n != 1 {
		t.Errorf("revoke cut %d requests, want the one to gone.example.com", n)
	}
	g, k := <-gone, <-kept
	if g.chunks >= 40 || g.took > 2*time.Second {
		t.Errorf("the download from the removed name got %d chunks in %v (err %v), want it cut at once", g.chunks, g.took, g.err)
	}
	if k.chunks != 40 || k.err != nil {
		t.Errorf("the download from the kept name got %d chunks (err %v), want all 40", k.chunks, k.err)
	}
	recs := waitRecords[policy.ConnRecord](t, log, 2)
	cut := 0
	for _, r := range recs {
		if strings.HasPrefix(r.Reason, "cut: gone.example.com is no longer allowed") {
			cut++
		}
	}
	if cut != 1 {
		t.Errorf("log records %+v, want the cut one named", recs)
	}
}
