//go:build e2e

package main

import (
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

const redteam5Usage = `       claude net rt5-udpflood SERVER:PORT NAME RATE SECONDS   A queries for NAME (the index replaces percent-d), RATE a
                                                   second for SECONDS, sent without waiting for answers
       claude net rt5-hello ADDR:PORT SNI VARIANT SECS     a ClientHello naming SNI in a shape the ECH tests lack:
                                                   psk (TLS 1.3 resumption: GREASE-like ECH in the middle, a
                                                   pre_shared_key with its binder last), sslv2 (SSLv2's
                                                   compatible hello, which has no extensions), v34 (ECH in a
                                                   record of version 3.4), plain (crypto/tls's
                                                   own, the control); then waits SECS for an answer
       claude net rt5-slowloris ADDR:PORT N SECS HEX PAD  N connections, each sending the bytes HEX then PAD bytes
                                                   "a" and holding until the server closes it, then again,
                                                   for SECS
The fifth red team's probes (e2e/attack_redteam5_test.go).`

// redteam5Probe runs one of the fifth red team's probes; ok is false for another mode.
func redteam5Probe(args []string) (map[string]any, bool) {
	switch args[0] {
	case "rt5-udpflood":
		return probeUDPFlood(args[1:]), true
	case "rt5-hello":
		return probeOddHello(args[1:]), true
	case "rt5-slowloris":
		return probeSlowloris(args[1:]), true
	}
	return nil, false
}

// probeUDPFlood sends RATE queries a second for SECONDS from 16 sockets, each for NAME with %d
// replaced by the query's index, and never waits for an answer: every query netd must ask
// upstream holds one of its goroutines (and an upstream socket) for as long as that takes. It
// counts the answers that come back while it sends and for 2 s after.
func probeUDPFlood(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need SERVER:PORT NAME RATE SECONDS"}
	}
	rate, err := benchCount(args[2])
	if err != nil {
		return failed(err)
	}
	secs, err := benchCount(args[3])
	if err != nil {
		return failed(err)
	}
	const socks = 16
	var conns []*net.UDPConn
	for range socks {
		c, err := net.Dial("udp", args[0])
		if err != nil {
			return failed(err)
		}
		conns = append(conns, c.(*net.UDPConn))
	}
	var answered, sendErrs atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for {
				c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := c.Read(buf); err == nil {
					answered.Add(1)
					continue
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	sent := 0
	start := time.Now()
	tick := 10 * time.Millisecond
	per := max(rate/100, 1)
	for time.Since(start) < time.Duration(secs)*time.Second {
		next := time.Now().Add(tick)
		for range per {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(strings.ReplaceAll(args[1], "%d", fmt.Sprint(sent))), dns.TypeA)
			b, _ := m.Pack()
			if _, err := conns[sent%socks].Write(b); err != nil {
				sendErrs.Add(1)
			}
			sent++
		}
		time.Sleep(time.Until(next))
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	return map[string]any{"ok": true, "sent": sent, "answered": answered.Load(), "send_errors": sendErrs.Load(),
		"per_s": int(float64(sent) / time.Since(start).Seconds())}
}

// probeOddHello sends one of the hellos of rt5-hello and waits, as ech-hello does: a refused
// connection is reset at once, one let through is left open or answered.
func probeOddHello(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI VARIANT SECS"}
	}
	secs, err1 := strconv.Atoi(args[3])
	ap, err := resolve(args[0])
	if err = errors.Join(err, err1); err != nil {
		return failed(err)
	}
	records, err := oddHello(args[1], args[2])
	if err != nil {
		return failed(err)
	}
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	if _, err := c.Write(records); err != nil {
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

// oddHello returns the records of variant.
func oddHello(sni, variant string) ([]byte, error) {
	switch variant {
	case "sslv2":
		// SSLv2's CLIENT-HELLO as TLS clients once sent it for compatibility (RFC 5246 E.2):
		// no extensions, so no server name at all.
		specs := []byte{0x00, 0x00, 0x2f, 0x00, 0x00, 0x35, 0x00, 0x00, 0xff}
		challenge := randomBytes(16)
		body := append([]byte{1, 3, 3}, be16(len(specs))...)
		body = append(append(append(body, 0, 0), be16(len(challenge))...), specs...)
		body = append(body, challenge...)
		return append([]byte{0x80 | byte(len(body)>>8), byte(len(body))}, body...), nil
	case "psk", "v34", "plain":
	default:
		return nil, fmt.Errorf("variant %q: want psk, sslv2, v34 or plain", variant)
	}
	hello, err := helloWith(&tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil || variant == "plain" {
		return hello, err
	}
	ech, _ := echBody("outer")
	msg, err := insertExtension(hello[5:], 0xfe0d, ech, "middle")
	if err != nil {
		return nil, err
	}
	if variant == "v34" {
		return frameAs(msg, 1<<14, 4), nil
	}
	if !hasExtension(msg, 0x2d) {
		if msg, err = insertExtension(msg, 0x2d, []byte{1, 1}, "last"); err != nil { // psk_dhe_ke
			return nil, err
		}
	}
	// pre_shared_key (RFC 8446 4.2.11), last as it must be: one identity (a ticket), its
	// obfuscated age, and its 32-byte binder.
	id := randomBytes(64)
	ids := append(append(be16(len(id)), id...), randomBytes(4)...)
	binders := append([]byte{32}, randomBytes(32)...)
	psk := append(append(append(be16(len(ids)), ids...), be16(len(binders))...), binders...)
	if msg, err = insertExtension(msg, 0x29, psk, "last"); err != nil {
		return nil, err
	}
	return frame(msg, 1<<14), nil
}

// hasExtension reports whether the ClientHello handshake message msg has extension typ.
func hasExtension(msg []byte, typ uint16) bool {
	at := 4 + 2 + 32
	at += 1 + int(msg[at])
	at += 2 + int(binary.BigEndian.Uint16(msg[at:]))
	at += 1 + int(msg[at])
	exts := msg[at+2:]
	for len(exts) >= 4 {
		if binary.BigEndian.Uint16(exts) == typ {
			return true
		}
		exts = exts[4+int(binary.BigEndian.Uint16(exts[2:])):]
	}
	return false
}

// probeSlowloris keeps N connections to ADDR:PORT, each holding what a listener buffers before
// it decides (a hello's record, a request's headers, a DNS message) all but complete, for SECS:
// a connection the server closes is opened again at once.
func probeSlowloris(args []string) map[string]any {
	if len(args) < 5 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT N SECS HEX PAD"}
	}
	n, err1 := benchCount(args[1])
	secs, err2 := benchCount(args[2])
	prefix, err3 := hex.DecodeString(args[3])
	pad, err4 := strconv.Atoi(args[4])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return failed(err)
	}
	payload := append(prefix, []byte(strings.Repeat("a", pad))...)
	end := time.Now().Add(time.Duration(secs) * time.Second)
	var opened, refused, held, maxHeld atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				c, err := net.DialTimeout("tcp", args[0], 5*time.Second)
				if err != nil {
					refused.Add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				opened.Add(1)
				if _, err := c.Write(payload); err != nil {
					refused.Add(1)
					c.Close()
					continue
				}
				h := held.Add(1)
				for m := maxHeld.Load(); h > m && !maxHeld.CompareAndSwap(m, h); m = maxHeld.Load() {
				}
				c.SetReadDeadline(end)
				c.Read(make([]byte, 1))
				held.Add(-1)
				c.Close()
			}
		}()
	}
	wg.Wait()
	return map[string]any{"ok": true, "tried": opened.Load(), "refused": refused.Load(), "held": maxHeld.Load()}
}
