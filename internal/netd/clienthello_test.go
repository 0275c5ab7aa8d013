package netd

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// realHello returns the records of the ClientHello crypto/tls sends for serverName ("" sends no
// server_name extension).
func realHello(t testing.TB, serverName string, alpn ...string) []byte {
	t.Helper()
	c1, c2 := net.Pipe()
	defer c2.Close()
	cfg := &tls.Config{ServerName: serverName, InsecureSkipVerify: true, NextProtos: alpn}
	go func() {
		tls.Client(c1, cfg).Handshake()
		c1.Close()
	}()
	raw, _, err := readClientHello(c2)
	if err != nil {
		t.Fatalf("reading crypto/tls's hello: %v", err)
	}
	return raw
}

// helloMsg builds a ClientHello handshake message with the given encoded extensions.
func helloMsg(exts ...[]byte) []byte {
	body := []byte{3, 3}
	body = append(body, make([]byte, 32)...) // random
	body = append(body, 0)                   // session id
	body = append(body, 0, 2, 0x13, 0x01)    // one cipher suite
	body = append(body, 1, 0)                // null compression
	all := bytes.Join(exts, nil)
	body = append(body, u16(len(all))...)
	body = append(body, all...)
	return append([]byte{handshakeClientHelo, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
}

// withTail replaces the (empty) extension block of a message from helloMsg with tail.
func withTail(msg []byte, tail ...byte) []byte {
	body := append(msg[4:len(msg)-2:len(msg)-2], tail...)
	return append([]byte{handshakeClientHelo, 0, byte(len(body) >> 8), byte(len(body))}, body...)
}

func u16(n int) []byte { return []byte{byte(n >> 8), byte(n)} }

// ext encodes one extension.
func ext(typ int, body []byte) []byte {
	return append(append(u16(typ), u16(len(body))...), body...)
}

// sniExt encodes a server_name extension with one entry per name, of type 0 unless the name
// starts with "type1:".
func sniExt(names ...string) []byte {
	var list []byte
	for _, n := range names {
		typ := byte(0)
		if rest, ok := strings.CutPrefix(n, "type1:"); ok {
			typ, n = 1, rest
		}
		list = append(append(append(list, typ), u16(len(n))...), n...)
	}
	return ext(extServerName, append(u16(len(list)), list...))
}

// records frames a handshake message into TLS records of at most size payload bytes.
func records(msg []byte, size int) []byte {
	var out []byte
	for len(msg) > 0 {
		n := min(size, len(msg))
		out = append(append(out, recordTypeHandshake, 3, 1), u16(n)...)
		out = append(out, msg[:n]...)
		msg = msg[n:]
	}
	return out
}

func TestClientHello(t *testing.T) {
	real := realHello(t, "example.com", "h2", "http/1.1")
	_, realMsg, _ := readClientHello(bytes.NewReader(real))
	tests := []struct {
		name    string
		in      []byte
		want    string
		wantErr string
	}{
		{"crypto/tls hello", real, "example.com", ""},
		{"crypto/tls hello without sni", realHello(t, ""), "", ""},
		{"split into 7-byte records", records(realMsg, 7), "example.com", ""},
		{"one record", records(helloMsg(sniExt("api.example.com")), 1<<14), "api.example.com", ""},
		{"no extensions", records(withTail(helloMsg()), 100), "", ""},
		{"extension block with trailing byte", records(withTail(helloMsg(), 0, 0, 9), 100), "", "malformed"},
		{"other name type only", records(helloMsg(sniExt("type1:x.example")), 100), "", ""},
		{"two host names", records(helloMsg(sniExt("a.example", "b.example")), 100), "", "malformed"},
		{"trailing dot", records(helloMsg(sniExt("a.example.")), 100), "", "malformed"},
		{"empty name", records(helloMsg(sniExt("")), 100), "", "malformed"},
		{"empty name list", records(helloMsg(ext(extServerName, u16(0))), 100), "", "malformed"},
		{"duplicate extension", records(helloMsg(sniExt("a.example"), sniExt("b.example")), 100), "", "malformed"},
		{"pre_shared_key not last", records(helloMsg(ext(extPreSharedKey, nil), sniExt("a.example")), 100), "", "malformed"},
		{"odd supported_groups", records(helloMsg(sniExt("a.example"), ext(extSupportedGroups, []byte{0, 3, 0, 29, 0})), 100), "", "malformed"},
		{"ems with a body", records(helloMsg(sniExt("a.example"), ext(extEMS, []byte{0})), 100), "", "malformed"},
		{"sni with trailing bytes", records(helloMsg(ext(extServerName, []byte{0, 4, 0, 0, 1, 'a', 9})), 100), "", "malformed"},
		{"application data record", append([]byte{23, 3, 3, 0, 1}, 0), "", "not a tls handshake"},
		{"http request", []byte("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"), "", "not a tls handshake"},
		{"server hello", records(append([]byte{2}, helloMsg(sniExt("a.example"))[1:]...), 100), "", "not a tls handshake"},
		{"sslv2 record version", append([]byte{22, 2, 0, 0, 1}, 1), "", "not a tls handshake"},
		{"empty record", append([]byte{22, 3, 1, 0, 0}, records(helloMsg(sniExt("a.example")), 100)...), "", "malformed"},
		{"a second hello in the hello's record", records(append(helloMsg(sniExt("a.example")), helloMsg(sniExt("b.example"))...), 1<<14), "", "malformed"},
		{"a second hello in the next record", append(records(helloMsg(sniExt("a.example")), 1<<14), records(helloMsg(sniExt("b.example")), 1<<14)...), "a.example", ""},
		{"truncated", records(helloMsg(sniExt("a.example")), 100)[:60], "", "unexpected EOF"},
		{"nothing", nil, "", "no client hello"},
		{"larger than 16 KiB", records(helloMsg(sniExt("a.example"), ext(21, make([]byte, 17000))), 1<<14), "", "larger than 16 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{bytes.NewReader(tc.in), iotest.OneByteReader(bytes.NewReader(tc.in))} {
				got, err := helloServerName(r)
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("server name = %q, %v; want error %q", got, err, tc.wantErr)
				}
				if got != tc.want {
					t.Errorf("server name = %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// helloServerName reads and parses one hello.
func helloServerName(r io.Reader) (string, error) {
	_, msg, err := readClientHello(r)
	if err != nil {
		return "", err
	}
	h, err := parseClientHello(msg)
	return h.serverName, err
}

func TestReadClientHelloStopsAtTheHello(t *testing.T) {
	hello := realHello(t, "example.com")
	in := append(append([]byte{}, hello...), "after"...)
	r := bytes.NewReader(in)
	raw, _, err := readClientHello(r)
	if err != nil || !bytes.Equal(raw, hello) {
		t.Fatalf("readClientHello = %d bytes, %v; want the %d bytes of the hello", len(raw), err, len(hello))
	}
	if rest, _ := io.ReadAll(r); string(rest) != "after" {
		t.Errorf("left %q unread, want %q", rest, "after")
	}
}

// replayConn is a net.Conn that reads fixed bytes and discards writes.
type replayConn struct{ r io.Reader }

func (c replayConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c replayConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c replayConn) Close() error                     { return nil }
func (c replayConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c replayConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c replayConn) SetDeadline(time.Time) error      { return nil }
func (c replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c replayConn) SetWriteDeadline(time.Time) error { return nil }

var errStopHandshake = errors.New("stop")

// goServerName feeds data to a crypto/tls server and reports the server name it saw, and
// whether it accepted the ClientHello at all.
func goServerName(data []byte) (name string, accepted bool) {
	name, _, accepted = goHello(data)
	return name, accepted
}

// goHello feeds data to a crypto/tls server and reports the server name and the extensions it
// saw, and whether it accepted the ClientHello at all.
func goHello(data []byte) (name string, exts []uint16, accepted bool) {
	cfg := &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		name, exts, accepted = chi.ServerName, chi.Extensions, true
		return nil, errStopHandshake
	}}
	tls.Server(replayConn{bytes.NewReader(data)}, cfg).Handshake()
	return name, exts, accepted
}

// FuzzParseClientHello checks that a server name is never read from a hello a real TLS stack
// rejects, or read differently from it, that the SNI proxy allows nothing else (no allow on
// malformed input, nor on a hello in which crypto/tls sees an extension of an encrypted
// ClientHello), and that the parser never panics.
func FuzzParseClientHello(f *testing.F) {
	f.Add(realHello(f, "example.com", "h2"))
	f.Add(realHello(f, ""))
	f.Add(realHello(f, "A.Example.COM"))
	f.Add(realHello(f, "example.com.evil.net"))
	f.Add(records(helloMsg(sniExt("a.example", "type1:b")), 9))
	f.Add(records(helloMsg(sniExt("a.example.com")), 7))
	f.Add(records(helloMsg(sniExt("a.example.com", "b.example.com")), 100))
	list, _ := echKey(f, "example.com")
	f.Add(echHello(f, list, "secret.example.net"))
	f.Add(records(helloMsg(sniExt("example.com"), ext(0xfe0d, []byte{1})), 9))
	f.Add(records(helloMsg(ext(0xffce, nil), sniExt("example.com")), 100))
	p := &sniProxy{cfg: testConfig(f, []string{"example.com", "*.example.com", "ssh.example.com:22"}, nil, "")}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSNIDecision(t, p, data)
		raw, msg, err := readClientHello(bytes.NewReader(data))
		if !bytes.HasPrefix(data, raw) {
			t.Fatalf("raw is not a prefix of the input")
		}
		if err != nil {
			return
		}
		h, err := parseClientHello(msg)
		name := h.serverName
		if err != nil || name == "" {
			return
		}
		goName, accepted := goServerName(data)
		if !accepted {
			t.Fatalf("read server name %q from a hello crypto/tls rejects", name)
		}
		if goName != name {
			t.Fatalf("read server name %q, crypto/tls read %q", name, goName)
		}
		if again, err := helloServerName(iotest.OneByteReader(bytes.NewReader(data))); again != name || err != nil {
			t.Fatalf("byte-by-byte read gave %q, %v; want %q", again, err, name)
		}
	})
}

// checkSNIDecision runs the SNI proxy's decision on data: an allowed connection must come from a
// hello crypto/tls accepts, name the host crypto/tls reads, and that host must be allowed on 443.
func checkSNIDecision(t *testing.T, p *sniProxy, data []byte) {
	t.Helper()
	var rec policy.ConnRecord
	raw, name, err := p.readDecision(bytes.NewReader(data), &rec)
	if !bytes.HasPrefix(data, raw) {
		t.Fatalf("replayed bytes are not a prefix of the input")
	}
	if err != nil {
		if r := (*refusal)(nil); !errors.As(err, &r) || r.verdict != policy.Denied {
			t.Fatalf("refusal %v is not a denial", err)
		}
		return
	}
	goName, exts, accepted := goHello(data)
	if !accepted || !strings.EqualFold(goName, name) || !p.cfg.get().list.Allows(name, 443) {
		t.Fatalf("allowed %q from a hello crypto/tls reads as %q (accepted %v)", name, goName, accepted)
	}
	for _, e := range exts {
		if _, ok := echExtensions[e]; ok {
			t.Fatalf("allowed %q from a hello with extension %#04x (%s)", name, e, echExtensions[e])
		}
	}
}
