//go:build e2e

package main

import (
	"bufio"
	"context"
	"crypto/tls"
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

const gateUsage = `       claude net tls-split ADDR:PORT SNI CHUNK PAUSE_MS  TLS whose ClientHello leaves CHUNK bytes at a time,
                                                   PAUSE_MS apart (TCP_NODELAY), then GET /
       claude net hello-stall ADDR:PORT SNI BYTES SECS    send the first BYTES of a ClientHello, then wait up to SECS
                                                   for the connection to be reset (ok: it was not)
       claude net tfo ADDR:PORT SNI                       a ClientHello in the SYN: TCP Fast Open without a cookie
       claude net hello-hold ADDR:PORT SNI N SECS         N connections at once, each stalled after 5 bytes of a
                                                   ClientHello for SECS; counts those reset or refused
       claude net tls-hold ADDR:PORT SNI SECS MARKER      one TLS connection kept busy with a GET / every 200 ms
                                                   for SECS, MARKER created once the first answer came
       claude net connect-then-hello ADDR:PORT SNI MARKER GO  connect, create MARKER, wait for the file GO,
                                                   then send a whole ClientHello (ok: the server answered)
       claude net tls-reuse ADDR:PORT SNI OTHER LPORT     TLS with SNI from local port LPORT, read to the server's
                                                   close, then again from LPORT with OTHER (ok: the second got through)
The TLS fast path's adversary: ADDR is resolved through the sandbox's resolver, as a client
would, so that the connection goes to an address netd opened for the name.`

// gateProbe runs one of the probes of the TLS fast path; ok is false for another mode.
func gateProbe(args []string) (map[string]any, bool) {
	switch args[0] {
	case "tls-split":
		return probeTLSSplit(args[1:]), true
	case "hello-stall":
		return probeHelloStall(args[1:]), true
	case "tfo":
		return probeTFO(args[1:]), true
	case "hello-hold":
		return probeHelloHold(args[1:]), true
	case "tls-hold":
		return probeTLSHold(args[1:]), true
	case "connect-then-hello":
		return probeConnectThenHello(args[1:]), true
	case "tls-reuse":
		return probeTLSReuse(args[1:]), true
	}
	return redteam2Probe(args)
}

// helloFor returns the records of the ClientHello crypto/tls sends for sni.
func helloFor(sni string) ([]byte, error) {
	c1, c2 := net.Pipe()
	defer c2.Close()
	go func() {
		tls.Client(c1, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake()
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

// resolve looks ADDR:PORT's host up through the system resolver (the sandbox's: netd's).
func resolve(addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a, uint16(p)), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("resolving %s: %v", host, err)
	}
	return netip.AddrPortFrom(ips[0], uint16(p)), nil
}

// splitConn writes everything in chunks of n bytes, pause apart.
type splitConn struct {
	net.Conn
	n     int
	pause time.Duration
}

func (c splitConn) Write(p []byte) (int, error) {
	sent := 0
	for len(p) > 0 {
		k := min(c.n, len(p))
		m, err := c.Conn.Write(p[:k])
		sent += m
		if err != nil {
			return sent, err
		}
		p = p[k:]
		if len(p) > 0 {
			time.Sleep(c.pause)
		}
	}
	return sent, nil
}

func probeTLSSplit(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI CHUNK PAUSE_MS"}
	}
	chunk, err1 := strconv.Atoi(args[2])
	pause, err2 := strconv.Atoi(args[3])
	ap, err := resolve(args[0])
	if err = errors.Join(err, err1, err2); err != nil {
		return failed(err)
	}
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	conn := tls.Client(splitConn{c, chunk, time.Duration(pause) * time.Millisecond}, &tls.Config{ServerName: args[1], InsecureSkipVerify: true})
	if err := conn.Handshake(); err != nil {
		return failed(err)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", args[1])
	body, _ := io.ReadAll(conn)
	return map[string]any{"ok": true, "reply": lastLine(string(body))}
}

func probeHelloStall(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI BYTES SECS"}
	}
	n, err1 := strconv.Atoi(args[2])
	secs, err2 := strconv.Atoi(args[3])
	ap, err := resolve(args[0])
	hello, err3 := helloFor(args[1])
	if err = errors.Join(err, err1, err2, err3); err != nil {
		return failed(err)
	}
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	if _, err := c.Write(hello[:min(n, len(hello))]); err != nil {
		return failed(err)
	}
	start := time.Now()
	c.SetReadDeadline(start.Add(time.Duration(secs) * time.Second))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return map[string]any{"ok": true, "reply": "not reset"}
	}
	return map[string]any{"ok": false, "error": fmt.Sprint(err), "after_ms": time.Since(start).Milliseconds()}
}

func probeTFO(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI"}
	}
	ap, err := resolve(args[0])
	hello, err2 := helloFor(args[1])
	if err = errors.Join(err, err2); err != nil {
		return failed(err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return failed(err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_NO_COOKIE, 1); err != nil {
		return failed(fmt.Errorf("TCP_FASTOPEN_NO_COOKIE: %w", err))
	}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5})
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	if err := unix.Sendto(fd, hello, unix.MSG_FASTOPEN, sa); err != nil {
		return failed(fmt.Errorf("sendto MSG_FASTOPEN: %w", err))
	}
	buf := make([]byte, 1)
	n, err := unix.Read(fd, buf)
	if err != nil || n == 0 {
		return map[string]any{"ok": false, "error": fmt.Sprintf("read: %d bytes, %v", n, err)}
	}
	return map[string]any{"ok": true, "reply": "the server answered"}
}

func probeHelloHold(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI N SECS"}
	}
	n, err1 := strconv.Atoi(args[2])
	secs, err2 := strconv.Atoi(args[3])
	ap, err := resolve(args[0])
	hello, err3 := helloFor(args[1])
	if err = errors.Join(err, err1, err2, err3); err != nil {
		return failed(err)
	}
	var refused, reset, held atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
			if err != nil {
				refused.Add(1)
				return
			}
			defer c.Close()
			c.(*net.TCPConn).SetNoDelay(true)
			c.Write(hello[:5])
			c.SetReadDeadline(time.Now().Add(time.Duration(secs) * time.Second))
			_, err = c.Read(make([]byte, 1))
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				held.Add(1)
			case errors.Is(err, syscall.ECONNRESET) || err != nil:
				reset.Add(1)
			}
		}()
	}
	wg.Wait()
	return map[string]any{"ok": true, "reply": fmt.Sprintf("held %d reset %d refused %d", held.Load(), reset.Load(), refused.Load())}
}

func probeTLSHold(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI SECS MARKER"}
	}
	secs, err1 := strconv.Atoi(args[2])
	ap, err := resolve(args[0])
	if err = errors.Join(err, err1); err != nil {
		return failed(err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp4", ap.String(), &tls.Config{ServerName: args[1], InsecureSkipVerify: true})
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	start, rounds := time.Now(), 0
	for time.Since(start) < time.Duration(secs)*time.Second {
		c.SetDeadline(time.Now().Add(3 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", args[1])
		resp, err := http.ReadResponse(r, nil)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			return map[string]any{"ok": false, "error": err.Error(), "rounds": rounds, "broke_after_s": time.Since(start).Seconds()}
		}
		if rounds == 0 {
			if f, err := os.Create(args[3]); err == nil {
				f.Close()
			}
		}
		rounds++
		time.Sleep(200 * time.Millisecond)
	}
	return map[string]any{"ok": true, "rounds": rounds}
}

func probeConnectThenHello(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI MARKER GO"}
	}
	ap, err := resolve(args[0])
	hello, err2 := helloFor(args[1])
	if err = errors.Join(err, err2); err != nil {
		return failed(err)
	}
	c, err := net.DialTimeout("tcp4", ap.String(), 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	if f, err := os.Create(args[2]); err == nil {
		f.Close()
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(args[3]); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return failed(errors.New("no go within a minute"))
		}
	}
	if _, err := c.Write(hello); err != nil {
		return failed(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n == 0 {
		return failed(fmt.Errorf("no answer: %v", err))
	}
	return map[string]any{"ok": true, "reply": "the server answered"}
}

// tlsFrom connects from local port lport (SO_REUSEADDR), with sni, GETs / with Connection: close
// and reads to the server's close, so that the server closes first and the port is free again.
func tlsFrom(ap netip.AddrPort, sni string, lport int) (string, error) {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{Port: lport},
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1) })
			return serr
		}}
	c, err := tls.DialWithDialer(d, "tcp4", ap.String(), &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", sni)
	body, err := io.ReadAll(c)
	// TLS reports the end at the server's close_notify; wait for its FIN too, so that the server
	// is the one that closed first and this port holds no TIME_WAIT.
	io.Copy(io.Discard, c.NetConn())
	return lastLine(string(body)), err
}

func probeTLSReuse(args []string) map[string]any {
	if len(args) < 4 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SNI OTHER LPORT"}
	}
	lport, err1 := strconv.Atoi(args[3])
	ap, err := resolve(args[0])
	if err = errors.Join(err, err1); err != nil {
		return failed(err)
	}
	first, err := tlsFrom(ap, args[1], lport)
	if err != nil {
		return map[string]any{"ok": false, "error": "first: " + err.Error()}
	}
	var second string
	for range 20 { // the port may take a moment to be free
		if second, err = tlsFrom(ap, args[2], lport); !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return map[string]any{"ok": false, "error": "second: " + err.Error(), "reply": first}
	}
	return map[string]any{"ok": true, "reply": second}
}
