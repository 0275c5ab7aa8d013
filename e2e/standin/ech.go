//go:build e2e

package main

import (
	"bytes"
	"crypto/ecdh"
	"crypto/hpke"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

const echUsage = `       claude net ech ADDR:PORT CONFIG INNER             TLS with Encrypted Client Hello under CONFIG (an
                                                   ECHConfigList, base64), naming INNER inside, GET /
       claude net ech-hello ADDR:PORT OUTER VARIANT SECS  crypto/tls's hello for OUTER with an ECH extension
                                                   added (VARIANT: CODEPOINT-BODY-POSITION, BODY outer,
                                                   inner or empty, POSITION first, middle or last; tls12,
                                                   records (of 7 bytes), segments (5 writes), trickle
                                                   (5 writes 50 ms apart) or pipelined (the hello without
                                                   ECH, then with it, in one record), with 0xfe0d), then
                                                   wait up to
                                                   SECS (ok: not reset, or the server answered)
       claude net ech-hrr ADDR:PORT OUTER CONFIG INNER first|second|rename  a hand-made TLS 1.3 hello
                                                   for OUTER with ECH for INNER in the first hello, or only
                                                   in the second, after the server's HelloRetryRequest, or
                                                   a second hello naming INNER in the clear (ok: the server
                                                   answered the hello that names INNER with a ServerHello)
Encrypted Client Hello: the outer server name is an allowed one, the inner one another.`

// echProbe runs one of the ECH probes; ok is false for another mode.
func echProbe(args []string) (map[string]any, bool) {
	switch args[0] {
	case "ech":
		return probeECH(args[1:]), true
	case "ech-hello":
		return probeECHHello(args[1:]), true
	case "ech-hrr":
		return probeECHHRR(args[1:]), true
	}
	return nil, false
}

func probeECH(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT CONFIG INNER"}
	}
	list, err := base64.StdEncoding.DecodeString(args[1])
	if err != nil {
		return failed(err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp4", args[0], &tls.Config{ServerName: args[2], InsecureSkipVerify: true,
		EncryptedClientHelloConfigList: list})
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", args[2])
	body, _ := io.ReadAll(conn)
	return map[string]any{"ok": true, "reply": lastLine(string(body)), "ech_accepted": conn.ConnectionState().ECHAccepted}
}

// probeECHHello sends crypto/tls's hello with an ECH extension added, and waits: a refused
// connection is reset at once, one let through is left open by a server that says nothing or
// answered by one that speaks TLS.
func probeECHHello(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT OUTER VARIANT SECS"}
	}
	secs, err1 := strconv.Atoi(args[3])
	ap, err := resolve(args[0])
	if err = errors.Join(err, err1); err != nil {
		return failed(err)
	}
	records, chunks, pause, err := echVariant(args[1], args[2])
	if err != nil {
		return failed(err)
	}
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	if _, err := (splitConn{c, (len(records) + chunks - 1) / chunks, pause}).Write(records); err != nil {
		return failed(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Duration(secs) * time.Second))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case n > 0:
		return map[string]any{"ok": true, "reply": "the server answered"}
	case errors.As(err, &ne) && ne.Timeout():
		return map[string]any{"ok": true, "reply": "not reset"}
	}
	return map[string]any{"ok": false, "error": fmt.Sprint(err)}
}

// echVariant returns the records of crypto/tls's hello for outer with the ECH extension of
// variant added, in how many TCP segments to send them and how long apart.
func echVariant(outer, variant string) (records []byte, segments int, pause time.Duration, err error) {
	typ, body, pos, maxVers, recordSize, segments := uint16(0xfe0d), "outer", "last", uint16(tls.VersionTLS13), 1<<14, 1
	var ms int
	pipelined := false
	switch {
	case variant == "pipelined":
		pipelined = true
	case variant == "tls12":
		maxVers = tls.VersionTLS12
	case variant == "records":
		recordSize = 7
	case variant == "segments":
		segments = 5
	case variant == "trickle":
		segments, ms = 5, 50
	default:
		parts := strings.Split(variant, "-")
		n, perr := strconv.ParseUint(strings.TrimPrefix(parts[0], "0x"), 16, 16)
		if len(parts) != 3 || perr != nil {
			return nil, 0, 0, fmt.Errorf("variant %q: want CODEPOINT-BODY-POSITION, tls12, records, segments, trickle or pipelined", variant)
		}
		typ, body, pos = uint16(n), parts[1], parts[2]
	}
	hello, err := helloWith(&tls.Config{ServerName: outer, InsecureSkipVerify: true, MaxVersion: maxVers})
	if err != nil {
		return nil, 0, 0, err
	}
	ext, err := echBody(body)
	if err != nil {
		return nil, 0, 0, err
	}
	msg, err := insertExtension(hello[5:], typ, ext, pos)
	if err != nil {
		return nil, 0, 0, err
	}
	if pipelined {
		msg = append(hello[5:], msg...) // the hello without ECH first, in the same record
	}
	return frame(msg, recordSize), segments, time.Duration(ms) * time.Millisecond, nil
}

// echBody is an ECH extension's body: an outer one as GREASE ECH makes it (random config id, enc
// and payload), the inner marker, or nothing.
func echBody(kind string) ([]byte, error) {
	switch kind {
	case "inner":
		return []byte{1}, nil
	case "empty":
		return nil, nil
	case "outer":
		enc, payload := make([]byte, 32), make([]byte, 144)
		rand.Read(enc)
		rand.Read(payload)
		b := append([]byte{0, 0, 1, 0, 1}, randomBytes(1)...) // outer, HKDF-SHA256, AES-128-GCM, config id
		b = append(append(b, be16(len(enc))...), enc...)
		return append(append(b, be16(len(payload))...), payload...), nil
	}
	return nil, fmt.Errorf("ECH body %q: want outer, inner or empty", kind)
}

// helloWith returns the one-record ClientHello crypto/tls sends with cfg.
func helloWith(cfg *tls.Config) ([]byte, error) {
	c1, c2 := net.Pipe()
	defer c2.Close()
	go func() {
		tls.Client(c1, cfg).Handshake()
		c1.Close()
	}()
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(c2, hdr); err != nil {
		return nil, err
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(c2, body); err != nil {
		return nil, err
	}
	return append(hdr, body...), nil
}

// insertExtension adds an extension to a ClientHello handshake message, first, in the middle of
// its extensions or last.
func insertExtension(msg []byte, typ uint16, body []byte, pos string) ([]byte, error) {
	if len(msg) < 4+2+32+1 || msg[0] != 1 {
		return nil, errors.New("not a client hello")
	}
	at := 4 + 2 + 32
	at += 1 + int(msg[at])                           // session id
	at += 2 + int(binary.BigEndian.Uint16(msg[at:])) // cipher suites
	at += 1 + int(msg[at])                           // compression methods
	exts := msg[at+2:]
	var list [][]byte
	for len(exts) >= 4 {
		n := 4 + int(binary.BigEndian.Uint16(exts[2:]))
		list, exts = append(list, exts[:n]), exts[n:]
	}
	e := append(append(be16(int(typ)), be16(len(body))...), body...)
	i := len(list)
	switch pos {
	case "first":
		i = 0
	case "middle":
		i = len(list) / 2
	case "last":
	default:
		return nil, fmt.Errorf("position %q: want first, middle or last", pos)
	}
	list = append(list[:i], append([][]byte{e}, list[i:]...)...)
	all := bytes.Join(list, nil)
	out := append(append(bytes.Clone(msg[:at]), be16(len(all))...), all...)
	n := len(out) - 4
	out[1], out[2], out[3] = byte(n>>16), byte(n>>8), byte(n)
	return out, nil
}

// frame puts a handshake message into TLS records of at most size bytes each, of record
// version TLS 1.0 as a first hello's (RFC 8446 §5.1).
func frame(msg []byte, size int) []byte { return frameAs(msg, size, 1) }

// frameAs is frame with record version TLS 1.minor-1: 3, TLS 1.2, after a HelloRetryRequest.
func frameAs(msg []byte, size int, minor byte) []byte {
	var out []byte
	for len(msg) > 0 {
		n := min(size, len(msg))
		out = append(append(out, 22, 3, minor), be16(n)...)
		out = append(out, msg[:n]...)
		msg = msg[n:]
	}
	return out
}

func be16(n int) []byte { return []byte{byte(n >> 8), byte(n)} }

// probeECHHRR speaks enough TLS 1.3 to send an encrypted ClientHello for inner, made by hand
// under config, in the first hello, or in the second only: the first then names outer without
// ECH and with no key share, which makes a server ask again (HelloRetryRequest). rename sends
// a second hello that names inner in the clear instead.
func probeECHHRR(args []string) map[string]any {
	if len(args) < 5 || (args[4] != "first" && args[4] != "second" && args[4] != "rename") {
		return map[string]any{"ok": false, "error": "need ADDR:PORT OUTER CONFIG INNER first|second|rename"}
	}
	cfg, err := parseECHConfigList(args[2])
	if err != nil {
		return failed(err)
	}
	ap, err := resolve(args[0])
	if err != nil {
		return failed(err)
	}
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return failed(err)
	}
	h := clientHello{random: randomBytes(32), sessionID: randomBytes(32), name: args[1]}
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if args[4] == "first" {
		h.keyShare = key.PublicKey().Bytes()
		msg, err := h.withECH(cfg, args[3])
		if err != nil {
			return failed(err)
		}
		c.Write(frame(msg, 1<<14))
		return serverAnswer(c, "")
	}
	c.Write(frame(h.message(), 1<<14))
	if res := serverAnswer(c, ""); res["reply"] != "hello retry request" {
		return map[string]any{"ok": false, "error": fmt.Sprintf("the first hello: %v, want a HelloRetryRequest", res)}
	}
	h.keyShare = key.PublicKey().Bytes()
	msg, err := h.withECH(cfg, args[3])
	if args[4] == "rename" {
		h.name = args[3]
		msg = h.message()
	}
	if err != nil {
		return failed(err)
	}
	c.Write(frameAs(msg, 1<<14, 3))
	return serverAnswer(c, "after the retry: ")
}

// serverAnswer reads the server's records up to its first handshake message or alert.
func serverAnswer(c net.Conn, prefix string) map[string]any {
	for {
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(c, hdr); err != nil {
			return map[string]any{"ok": false, "error": prefix + err.Error()}
		}
		body := make([]byte, int(binary.BigEndian.Uint16(hdr[3:])))
		if _, err := io.ReadFull(c, body); err != nil {
			return map[string]any{"ok": false, "error": prefix + err.Error()}
		}
		switch {
		case hdr[0] == 20: // change_cipher_spec, for middleboxes
			continue
		case hdr[0] == 21 && len(body) == 2:
			return map[string]any{"ok": false, "error": fmt.Sprintf("%salert %d", prefix, body[1])}
		case hdr[0] == 22 && len(body) >= 38 && body[0] == 2:
			if bytes.Equal(body[6:38], hrrRandom) {
				return map[string]any{"ok": true, "reply": prefix + "hello retry request"}
			}
			return map[string]any{"ok": true, "reply": prefix + "server hello"}
		}
		return map[string]any{"ok": false, "error": fmt.Sprintf("%srecord of type %d", prefix, hdr[0])}
	}
}

// hrrRandom is the random of a HelloRetryRequest (RFC 8446 §4.1.3).
var hrrRandom = []byte{0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// clientHello is a minimal TLS 1.3 ClientHello: TLS_AES_128_GCM_SHA256, X25519, a key share
// (none when keyShare is nil), and the extensions a server needs.
type clientHello struct {
	random, sessionID []byte
	name              string
	keyShare          []byte
}

// body is the hello without its handshake header, with exts after its own extensions.
func (h clientHello) body(sessionID []byte, exts ...[]byte) []byte {
	b := append([]byte{3, 3}, h.random...)
	b = append(append(b, byte(len(sessionID))), sessionID...)
	b = append(b, 0, 2, 0x13, 0x01, 1, 0)
	name := append(append([]byte{0}, be16(len(h.name))...), h.name...)
	shares := []byte{}
	if h.keyShare != nil {
		shares = append(append([]byte{0, 0x1d}, be16(len(h.keyShare))...), h.keyShare...)
	}
	all := [][]byte{
		extension(0, append(be16(len(name)), name...)),                              // server_name
		extension(10, []byte{0, 2, 0, 0x1d}),                                        // supported_groups: x25519
		extension(13, []byte{0, 8, 0x04, 0x03, 0x08, 0x04, 0x08, 0x07, 0x04, 0x01}), // signature_algorithms
		extension(43, []byte{2, 3, 4}),                                              // supported_versions: TLS 1.3
		extension(51, append(be16(len(shares)), shares...)),                         // key_share
	}
	e := bytes.Join(append(all, exts...), nil)
	return append(append(b, be16(len(e))...), e...)
}

func extension(typ int, body []byte) []byte {
	return append(append(be16(typ), be16(len(body))...), body...)
}

// message is the hello as a handshake message.
func (h clientHello) message() []byte { return handshake(h.body(h.sessionID)) }

func handshake(body []byte) []byte {
	return append([]byte{1, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
}

// echConfig is the part of an ECHConfig a client encrypts with (RFC 9849 §4).
type echConfig struct {
	raw       []byte // the whole ECHConfig, version and length included
	id        uint8
	publicKey []byte // DHKEM(X25519, HKDF-SHA256)
}

// parseECHConfigList reads the first config of a base64 ECHConfigList, which must use X25519,
// HKDF-SHA256 and AES-128-GCM, as testsrv's does.
func parseECHConfigList(b64 string) (echConfig, error) {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) < 2+4+1+2+2 {
		return echConfig{}, fmt.Errorf("not an ECHConfigList: %v", err)
	}
	b = b[2:]
	n := 4 + int(binary.BigEndian.Uint16(b[2:]))
	if binary.BigEndian.Uint16(b) != 0xfe0d || n > len(b) {
		return echConfig{}, errors.New("not an ECHConfig of RFC 9849")
	}
	c := echConfig{raw: b[:n], id: b[4]}
	if binary.BigEndian.Uint16(b[5:]) != 0x0020 {
		return echConfig{}, errors.New("the config's KEM is not X25519")
	}
	k := int(binary.BigEndian.Uint16(b[7:]))
	c.publicKey = b[9 : 9+k]
	return c, nil
}

// withECH returns the hello as a ClientHelloOuter that carries, encrypted under cfg, a
// ClientHelloInner naming inner (RFC 9849 §5 and §6.1): a fresh HPKE context, so a server can
// decrypt it whether or not an earlier hello offered ECH.
func (h clientHello) withECH(cfg echConfig, inner string) ([]byte, error) {
	pk, err := hpke.DHKEM(ecdh.X25519()).NewPublicKey(cfg.publicKey)
	if err != nil {
		return nil, err
	}
	info := append([]byte("tls ech\x00"), cfg.raw...)
	enc, sender, err := hpke.NewSender(pk, hpke.HKDFSHA256(), hpke.AES128GCM(), info)
	if err != nil {
		return nil, err
	}
	in := h
	in.name, in.random = inner, randomBytes(32)
	encoded := in.body(nil, extension(0xfe0d, []byte{1})) // the inner marker; session id left out
	payload := make([]byte, len(encoded)+16)              // AES-128-GCM's tag
	ext := []byte{0, 0, 1, 0, 1, cfg.id}
	ext = append(append(ext, be16(len(enc))...), enc...)
	ext = append(append(ext, be16(len(payload))...), payload...)
	outer := h.body(h.sessionID, extension(0xfe0d, ext))
	// The payload is last: the AAD is the outer hello with it zeroed, as it is now.
	sealed, err := sender.Seal(outer, encoded)
	if err != nil {
		return nil, err
	}
	copy(outer[len(outer)-len(payload):], sealed)
	return handshake(outer), nil
}
