//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/testca"
	"github.com/miekg/dns"
)

// logBuffer collects the JSON log lines of a server under test.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// events returns the logged events whose msg is msg.
func (b *logBuffer) events(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if ev["msg"] == msg {
			out = append(out, ev)
		}
	}
	return out
}

// testServer is a server listening on loopback with every protocol on.
type testServer struct {
	*server
	ca                *testca.CA
	logs              *logBuffer
	https, http, tcp  string
	udp, dnsU, dnsTCP string
}

// startServer starts a server for names (nil: any name), with setup applied before it serves.
func startServer(t *testing.T, names []string, setup ...func(*server)) *testServer {
	t.Helper()
	ca, err := testca.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ca.Save(dir); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	s := &server{name: "srv1", log: slog.New(slog.NewJSONHandler(logs, nil))}
	if s.certs, err = newCertSource(dir, names); err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{server: s, ca: ca, logs: logs}
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	packet := func() net.PacketConn {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		return pc
	}
	l := listen()
	ts.https = l.Addr().String()
	go s.serveHTTPS(l)
	l = listen()
	ts.http = l.Addr().String()
	go s.serveHTTP(l)
	l = listen()
	ts.tcp = l.Addr().String()
	go s.serveTCP(l)
	pc := packet()
	ts.udp = pc.LocalAddr().String()
	go s.serveUDP(pc)
	pc, l = packet(), listen()
	ts.dnsU, ts.dnsTCP = pc.LocalAddr().String(), l.Addr().String()
	s.serveDNS(ctx, pc, l, &dnsHandler{s: s, answer: net.IPv4(10, 9, 8, 7), ttl: 30})
	t.Cleanup(cancel)
	return ts
}

// get fetches path over HTTPS from ts, sending sni and host.
func (ts *testServer) get(t *testing.T, sni, host, path string) (string, error) {
	t.Helper()
	return ts.getWith(t, &tls.Config{RootCAs: ts.ca.Pool(), ServerName: sni}, host, path)
}

// getWith fetches path over HTTPS from ts with the client configuration cfg, sending host.
func (ts *testServer) getWith(t *testing.T, cfg *tls.Config, host, path string) (string, error) {
	t.Helper()
	tr := &http.Transport{
		TLSClientConfig: cfg,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", ts.https)
		},
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest("GET", "https://"+host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestHTTPSNamesHostAndSNI(t *testing.T) {
	ts := startServer(t, nil)
	got, err := ts.get(t, "allowed.test", "other.test", "/x")
	if err != nil {
		t.Fatal(err)
	}
	want := "testsrv name=srv1 proto=https host=other.test sni=allowed.test path=/x\n"
	if got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	ev := ts.logs.events(t, "request")
	if len(ev) != 1 || ev[0]["sni"] != "allowed.test" || ev[0]["host"] != "other.test" {
		t.Errorf("request log = %v, want one with sni allowed.test, host other.test", ev)
	}
	if hello := ts.logs.events(t, "tls-hello"); len(hello) != 1 {
		t.Errorf("tls-hello events = %v, want one", hello)
	}
}

func TestHTTPSFixedNamesRejectOthers(t *testing.T) {
	ts := startServer(t, []string{"allowed.test"})
	for _, name := range []string{"allowed.test", "api.allowed.test"} {
		if _, err := ts.get(t, name, name, "/"); err != nil {
			t.Errorf("GET https://%s = %v, want ok", name, err)
		}
	}
	if _, err := ts.get(t, "other.test", "other.test", "/"); err == nil {
		t.Error("GET https://other.test verified, want a certificate name mismatch")
	}
}

func TestBytes(t *testing.T) {
	ts := startServer(t, nil)
	for _, n := range []int{0, 1, 65536, 1<<20 + 3} {
		got, err := ts.get(t, "bulk.test", "bulk.test", fmt.Sprintf("/bytes/%d", n))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Errorf("GET /bytes/%d returned %d bytes", n, len(got))
		}
	}
}

func TestHTTPEchoesHost(t *testing.T) {
	ts := startServer(t, nil)
	req, _ := http.NewRequest("GET", "http://"+ts.http+"/p", nil)
	req.Host = "plain.test"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := "testsrv name=srv1 proto=http host=plain.test sni= path=/p\n"
	if string(b) != want {
		t.Errorf("body = %q, want %q", b, want)
	}
}

func TestTCPBannerAndEcho(t *testing.T) {
	ts := startServer(t, nil)
	c, err := net.DialTimeout("tcp", ts.tcp, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	banner, _ := r.ReadString('\n')
	_, port, _ := net.SplitHostPort(ts.tcp)
	if want := "testsrv srv1 tcp/" + port + "\n"; banner != want {
		t.Errorf("banner = %q, want %q", banner, want)
	}
	fmt.Fprintln(c, "ping")
	if echo, _ := r.ReadString('\n'); echo != "ping\n" {
		t.Errorf("echo = %q, want %q", echo, "ping\n")
	}
}

func TestUDPEcho(t *testing.T) {
	ts := startServer(t, nil)
	c, err := net.Dial("udp", ts.udp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(c, "hi")
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ts.udp)
	if want := "testsrv srv1 udp/" + port + ": hi"; string(buf[:n]) != want {
		t.Errorf("reply = %q, want %q", buf[:n], want)
	}
}

func TestDNSAnswersAndLogs(t *testing.T) {
	ts := startServer(t, nil)
	for _, tc := range []struct{ network, addr string }{{"udp", ts.dnsU}, {"tcp", ts.dnsTCP}} {
		m := new(dns.Msg)
		m.SetQuestion("exfil.example.", dns.TypeA)
		r, _, err := (&dns.Client{Net: tc.network, Timeout: 5 * time.Second}).Exchange(m, tc.addr)
		if err != nil {
			t.Fatalf("%s query: %v", tc.network, err)
		}
		if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.9.8.7" {
			t.Errorf("%s answer = %v, want 10.9.8.7", tc.network, r.Answer)
		}
	}
	m := new(dns.Msg)
	m.SetQuestion("exfil.example.", dns.TypeAAAA)
	r, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, ts.dnsU)
	if err != nil || len(r.Answer) != 0 || r.Rcode != dns.RcodeSuccess {
		t.Errorf("AAAA = %v, %v; want an empty NOERROR", r, err)
	}
	if got := ts.logs.events(t, "dns"); len(got) != 3 || got[0]["name"] != "exfil.example" {
		t.Errorf("dns log = %v, want 3 queries for exfil.example", got)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-name", "x", "-tcp-ports", "22, 2222", "-udp-ports", "", "-names", "a.test,b.test"})
	if err != nil {
		t.Fatal(err)
	}
	if o.name != "x" || len(o.tcpPorts) != 2 || o.tcpPorts[1] != 2222 || len(o.udpPorts) != 0 || len(o.names) != 2 {
		t.Errorf("parseFlags = %+v", o)
	}
	for _, bad := range [][]string{{"-tcp-ports", "99999"}, {"extra"}, {"-nope"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) = nil error, want one", bad)
		}
	}
}

// TestDNSSpread: -dns-spread answers n addresses of 198.18.0.0/15 per name, the same for a name
// every time, new ones for every query of a "rot" name.
func TestDNSSpread(t *testing.T) {
	h := &dnsHandler{spread: 32}
	a, b := h.spreadAnswer("n1.flood.test."), h.spreadAnswer("n1.flood.test.")
	if len(a) != 32 || a[0].String() != b[0].String() {
		t.Fatalf("spreadAnswer = %v then %v, want 32 stable addresses", a, b)
	}
	seen := map[string]bool{}
	for _, ip := range append(h.spreadAnswer("rot.flood.test."), h.spreadAnswer("rot.flood.test.")...) {
		if !(&net.IPNet{IP: net.IPv4(198, 18, 0, 0), Mask: net.CIDRMask(15, 32)}).Contains(ip) {
			t.Errorf("%v is outside 198.18.0.0/15", ip)
		}
		seen[ip.String()] = true
	}
	if len(seen) != 64 {
		t.Errorf("two queries of a rot name gave %d distinct addresses, want 64", len(seen))
	}
}

// TestDNSMap: -dns-map answers the names of its file, read again for every query, and the
// default for the others.
func TestDNSMap(t *testing.T) {
	file := filepath.Join(t.TempDir(), "map")
	h := &dnsHandler{answer: net.IPv4(10, 9, 8, 7), mapFile: file}
	if a := h.mapped("a.test."); a != nil {
		t.Errorf("mapped without a file = %v, want nil", a)
	}
	if err := os.WriteFile(file, []byte("a.test 192.0.2.1\nbad\nB.test 192.0.2.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a.test.": "192.0.2.1", "b.TEST.": "192.0.2.2", "c.test.": "<nil>"} {
		if got := h.mapped(name).String(); got != want {
			t.Errorf("mapped(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestDripAndSink: /drip/<s> streams a line every 200 ms; /sink reads a body line by line.
func TestDripAndSink(t *testing.T) {
	ts := startServer(t, nil)
	resp, err := http.Get("http://" + ts.http + "/drip/1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(b), "drip "); n != 5 {
		t.Errorf("/drip/1 sent %d lines, want 5: %q", n, b)
	}
	resp, err = http.Post("http://"+ts.http+"/sink", "text/plain", strings.NewReader("one\ntwo\nthree\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "testsrv name=srv1 sink lines=3\n"; string(b) != want {
		t.Errorf("/sink = %q, want %q", b, want)
	}
}

// TestHTTPSServesTheEncryptedName: with -ech-public-name the server logs its ECH config, and a
// client that encrypts its hello for another name under it is served that name, its
// certificate verified; a client without ECH is served the name it sends.
func TestHTTPSServesTheEncryptedName(t *testing.T) {
	ts := startServer(t, nil, func(s *server) {
		if err := s.setupECH("cdn.test"); err != nil {
			t.Fatal(err)
		}
	})
	ev := ts.logs.events(t, "ech-config")
	if len(ev) != 1 || ev[0]["public_name"] != "cdn.test" {
		t.Fatalf("ech-config events = %v, want one for cdn.test", ev)
	}
	list, err := base64.StdEncoding.DecodeString(fmt.Sprint(ev[0]["config_list"]))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: ts.ca.Pool(), ServerName: "secret-backend.test", EncryptedClientHelloConfigList: list}
	body, err := ts.getWith(t, cfg, "secret-backend.test", "/")
	if err != nil || !strings.Contains(body, "sni=secret-backend.test path=/ ech=accepted") {
		t.Errorf("GET with ECH = %q, %v; want the inner name served, ECH accepted", body, err)
	}
	body, err = ts.get(t, "cdn.test", "cdn.test", "/")
	if err != nil || !strings.Contains(body, "sni=cdn.test path=/\n") {
		t.Errorf("GET without ECH = %q, %v; want cdn.test, no ECH", body, err)
	}
}
