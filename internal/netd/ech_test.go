package netd

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/netd/nfq"
	"github.com/aboxhq/abox/internal/policy"
)

// An encrypted ClientHello (RFC 9849) names one server outside and another, encrypted, inside;
// a server holding the key serves the inner one. These tests run the real thing, crypto/tls's
// client and server, through both of netd's deciders.

// echKey returns an ECHConfigList naming publicName (X25519, HKDF-SHA256, AES-128-GCM), for a
// client, and the key a server decrypts it with.
func echKey(t testing.TB, publicName string) ([]byte, tls.EncryptedClientHelloKey) {
	t.Helper()
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := priv.PublicKey().Bytes()
	var c []byte
	c = append(c, 1)          // config_id
	c = append(c, 0x00, 0x20) // DHKEM(X25519, HKDF-SHA256)
	c = append(append(c, u16(len(pub))...), pub...)
	c = append(c, 0, 4, 0, 1, 0, 1) // HKDF-SHA256, AES-128-GCM
	c = append(c, 0)                // maximum_name_length
	c = append(append(c, byte(len(publicName))), publicName...)
	c = append(c, 0, 0) // no extensions
	config := append(append(u16(extECH), u16(len(c))...), c...)
	list := append(u16(len(config)), config...)
	return list, tls.EncryptedClientHelloKey{Config: config, PrivateKey: priv.Bytes(), SendAsRetry: true}
}

// echHello returns the records of the ClientHello crypto/tls sends for inner with ECH under
// configList: its outer server name is the config's public name.
func echHello(t testing.TB, configList []byte, inner string) []byte {
	t.Helper()
	c1, c2 := net.Pipe()
	defer c2.Close()
	cfg := &tls.Config{ServerName: inner, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13,
		EncryptedClientHelloConfigList: configList}
	go func() {
		tls.Client(c1, cfg).Handshake()
		c1.Close()
	}()
	raw, _, err := readClientHello(c2)
	if err != nil {
		t.Fatalf("reading crypto/tls's ECH hello: %v", err)
	}
	return raw
}

// echUpstream is an HTTPS server that decrypts encrypted hellos under key and answers with the
// server name it served, and counts the connections it accepted.
func echUpstream(t *testing.T, key tls.EncryptedClientHelloKey) (port int, conns *atomic.Int64) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s ech=%v", r.TLS.ServerName, r.TLS.ECHAccepted)
	}))
	conns = &atomic.Int64{}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13, EncryptedClientHelloKeys: []tls.EncryptedClientHelloKey{key}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, conns
}

// getECH makes an HTTPS request for inner over conn, with ECH under configList.
func getECH(conn net.Conn, configList []byte, inner string) (string, error) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	c := tls.Client(conn, &tls.Config{ServerName: inner, InsecureSkipVerify: true, EncryptedClientHelloConfigList: configList})
	if err := c.Handshake(); err != nil {
		return "", err
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", inner)
	b, err := io.ReadAll(c)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1], err
}

// TestSNIProxyRefusesEncryptedClientHello: a client that encrypts its hello for
// secret.example.net under a config whose public name is the allowed example.com gets that
// server from an upstream that decrypts it, straight; through the TLS proxy it is refused,
// logged with its own reason and the outer name, and the upstream sees no connection.
func TestSNIProxyRefusesEncryptedClientHello(t *testing.T) {
	list, key := echKey(t, "example.com")
	port, conns := echUpstream(t, key)
	direct, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	// The attack works where netd is not: the upstream serves the name inside.
	if got, err := getECH(direct, list, "secret.example.net"); err != nil || got != "hello secret.example.net ech=true" {
		t.Fatalf("ECH straight to the upstream = %q, %v; want the inner name served", got, err)
	}
	before := conns.Load()
	f := startSNI(t, port, fakeDNS{"example.com": loopback}, time.Second, 8)
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := getECH(c, list, "secret.example.net"); err == nil {
		t.Errorf("ECH through the proxy = %q, want it refused", got)
	}
	r := waitRecords[policy.ConnRecord](t, f.log, 1)[0]
	if r.Verdict != policy.Denied || r.Reason != policy.ReasonECH || r.Name != "example.com" || r.Kernel {
		t.Errorf("logged %+v, want a denial %q of example.com", r, policy.ReasonECH)
	}
	time.Sleep(50 * time.Millisecond)
	if n := conns.Load() - before; n != 0 {
		t.Errorf("the upstream accepted %d connection(s) through the proxy, want none", n)
	}
}

// echVariant is a hello carrying an extension of an encrypted ClientHello in some form.
type echVariant struct {
	name string
	msg  []byte // the handshake message
	ech  uint16 // the extension netd must find
}

// echNumbers are the extension numbers of ECH and ESNI the package doc lists, written out here
// rather than read from echExtensions, so that a number dropped from the list fails the tests.
var echNumbers = []uint16{
	0xfe0d, 0xfd00, // RFC 9849
	0xfe08, 0xfe09, 0xfe0a, 0xfe0b, 0xfe0c, 0xda09, // drafts 08 to 12
	0xff02, 0xff03, 0xff04, // draft 07
	0xffce, // ESNI
}

// echVariants returns hellos naming an allowed server outside and carrying every extension of
// echNumbers, in every position, with every kind of body; and a hello of each of TLS 1.2's and
// crypto/tls's own shapes.
func echVariants(t testing.TB) []echVariant {
	t.Helper()
	grease := make([]byte, 1+4+1+2+32+2+200)
	rand.Read(grease)
	grease[0] = 0                         // outer
	copy(grease[1:], []byte{0, 1, 0, 1})  // HKDF-SHA256, AES-128-GCM
	copy(grease[6:], []byte{0, 32})       // enc
	copy(grease[6+2+32:], []byte{0, 200}) // payload
	bodies := map[string][]byte{"outer": grease, "inner": {1}, "empty": nil, "junk": {7, 7, 7}}
	sni := sniExt("api.example.com")
	groups := ext(extSupportedGroups, []byte{0, 2, 0, 29})
	alpn := ext(extALPN, []byte{0, 3, 2, 'h', '2'})
	var out []echVariant
	for _, typ := range echNumbers {
		for _, body := range []string{"outer", "inner", "empty", "junk"} {
			e := ext(int(typ), bodies[body])
			for pos, exts := range map[string][][]byte{
				"first":  {e, sni, groups, alpn},
				"middle": {sni, groups, e, alpn},
				"last":   {sni, groups, alpn, e},
			} {
				out = append(out, echVariant{fmt.Sprintf("%#04x %s %s", typ, body, pos), helloMsg(exts...), typ})
			}
		}
	}
	list, _ := echKey(t, "api.example.com")
	_, real, err := readClientHello(bytes.NewReader(echHello(t, list, "secret.example.net")))
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, echVariant{"crypto/tls with ECH", real, extECH},
		echVariant{"tls 1.2 shape", tls12Hello(sni, ext(extECH, grease)), extECH})
	return out
}

// tls12Hello is a ClientHello as a TLS 1.2 client writes it: TLS 1.2 suites only, no
// supported_versions.
func tls12Hello(exts ...[]byte) []byte {
	msg := helloMsg(exts...)
	// helloMsg's one suite is TLS 1.3's TLS_AES_128_GCM_SHA256: ECDHE-RSA-AES128-GCM-SHA256.
	i := 4 + 2 + 32 + 1 + 2
	msg[i], msg[i+1] = 0xc0, 0x2f
	return msg
}

// TestClientHelloECH: the parser finds every extension of an encrypted ClientHello, in any
// position and with any body, in crypto/tls's ECH hello and in a TLS 1.2-shaped one, also split
// over many records; it finds none in a hello without, nor for the extension numbers beside
// them.
func TestClientHelloECH(t *testing.T) {
	for _, v := range echVariants(t) {
		t.Run(v.name, func(t *testing.T) {
			for _, in := range [][]byte{records(v.msg, 1<<14), records(v.msg, 7)} {
				_, msg, err := readClientHello(bytes.NewReader(in))
				if err != nil {
					t.Fatal(err)
				}
				h, err := parseClientHello(msg)
				if err != nil || h.ech != v.ech {
					t.Fatalf("parseClientHello = %+v, %v; want ECH %#04x", h, err, v.ech)
				}
			}
		})
	}
	if got := slices.Sorted(maps.Keys(echExtensions)); !slices.Equal(got, slices.Sorted(slices.Values(echNumbers))) {
		t.Errorf("echExtensions holds %x, the package doc lists %x", got, slices.Sorted(slices.Values(echNumbers)))
	}
	for _, typ := range []int{0xfe07, 0xfe0e, 0xfd01, 0xff01, 0xff05, 0xffcd, 0xffcf, 0xda08, 21} {
		body := []byte{}
		if typ == extRenegotiation {
			body = []byte{0}
		}
		h, err := parseClientHello(helloMsg(sniExt("api.example.com"), ext(typ, body)))
		if err != nil || h.ech != 0 || h.serverName != "api.example.com" {
			t.Errorf("extension %#04x: parseClientHello = %+v, %v; want no ECH", typ, h, err)
		}
	}
	h, err := parseClientHello(mustMsg(t, realHello(t, "api.example.com", "h2")))
	if err != nil || h.ech != 0 {
		t.Errorf("crypto/tls's hello without ECH: %+v, %v; want no ECH", h, err)
	}
}

func mustMsg(t testing.TB, records []byte) []byte {
	t.Helper()
	_, msg, err := readClientHello(bytes.NewReader(records))
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestProxyAndGateDecideAlike: the TLS proxy, on a connection it accepted, and the serving
// child, on a held flow's hello (the fast path), make the same decision with the same reason
// and name: for allowed and refused names, and for every hello with an encrypted ClientHello.
func TestProxyAndGateDecideAlike(t *testing.T) {
	_, port := tlsUpstream(t)
	cases := []struct {
		name  string
		hello []byte
	}{
		{"allowed", realHello(t, "api.example.com")},
		{"not allowed", realHello(t, "evil.example.com")},
		{"no sni", realHello(t, "")},
		{"other port only", realHello(t, "git.example.com")},
		{"malformed", records(withTail(helloMsg(), 0, 0, 9), 100)},
	}
	for _, v := range echVariants(t) {
		cases = append(cases, struct {
			name  string
			hello []byte
		}{"ech " + v.name, records(v.msg, 1<<14)})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A proxy of its own: the log would count a refusal like the last as a repeat.
			f := startSNI(t, port, fakeDNS{"api.example.com": loopback}, time.Second, 8)
			held := &sniProxy{cfg: f.p.cfg, log: newJSONL(io.Discard, maxLogBytes), now: time.Now}
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(tc.hello)
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			c.Read(make([]byte, 1))
			c.Close()
			proxy := waitRecords[policy.ConnRecord](t, f.log, 1)[0]
			gate, name, err := held.decideHeld("172.30.0.2:40000 127.0.0.1:443", tc.hello)
			if proxy.Verdict != gate.Verdict || proxy.Reason != gate.Reason || proxy.Name != gate.Name {
				t.Errorf("proxy logged %s %q (%q), the child %s %q (%q)", proxy.Verdict, proxy.Reason, proxy.Name,
					gate.Verdict, gate.Reason, gate.Name)
			}
			if (err == nil) != (proxy.Verdict == policy.Allowed) || (err == nil && name != proxy.Name) {
				t.Errorf("decideHeld = %q, %v; the proxy %s", name, err, proxy.Verdict)
			}
			if strings.HasPrefix(tc.name, "ech ") && gate.Reason != policy.ReasonECH {
				t.Errorf("the child refused %s, want %q", gate.Reason, policy.ReasonECH)
			}
		})
	}
}

// TestGateRefusesEncryptedClientHello: a held flow whose hello, sent in two parts, carries an
// encrypted ClientHello with an allowed outer name is refused by the child's decision, no
// packet with data leaves, and the refusal is logged as carried by the kernel.
func TestGateRefusesEncryptedClientHello(t *testing.T) {
	var log syncBuffer
	p := &sniProxy{cfg: testConfig(t, []string{"exact.test"}, nil, ""), log: newJSONL(&log, 1<<20), now: time.Now}
	q := newFakeQueue()
	g := newTLSGate(q, func(_ context.Context, tq tlsQuestion) tlsAnswer {
		rec, name, err := p.decideHeld(tq.flow.String(), tq.hello)
		p.log.write(rec)
		return tlsAnswer{name: name, err: err}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.serve(ctx); close(done) }()
	defer func() { cancel(); close(q.in); <-done }()
	list, _ := echKey(t, "exact.test")
	h := echHello(t, list, "secret.example.net")
	q.in <- nfq.Packet{ID: 1, Payload: segment(agentEnd, 1000, nfq.SYN, nil)}
	q.in <- nfq.Packet{ID: 2, Payload: segment(agentEnd, 1001, nfq.ACK, h[:100])}
	q.in <- nfq.Packet{ID: 3, Payload: segment(agentEnd, 1101, nfq.ACK|nfq.PSH, h[100:])}
	if v := q.wait(t, 1); v != policy.VerdictPass {
		t.Errorf("SYN: verdict %#x, want pass", v)
	}
	for _, id := range []uint32{2, 3} {
		if v := q.wait(t, id); v == policy.VerdictPass || v == policy.VerdictAllow {
			t.Errorf("packet %d of the ECH hello: verdict %#x, want it dropped or refused", id, v)
		}
	}
	if v := q.wait(t, 3); v != policy.VerdictDeny {
		t.Errorf("the hello's last packet: verdict %#x, want deny", v)
	}
	r := waitRecords[policy.ConnRecord](t, &log, 1)[0]
	if r.Verdict != policy.Denied || r.Reason != policy.ReasonECH || r.Name != "exact.test" || !r.Kernel {
		t.Errorf("logged %+v, want a kernel denial %q of exact.test", r, policy.ReasonECH)
	}
}
