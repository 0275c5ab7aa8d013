//go:build e2e

package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"
)

// maxLogged bounds how much of one line or datagram goes into the log.
const maxLogged = 256

// serveTCP sends each client a banner naming this server and the port, then echoes every line
// back until the client closes or is idle for a minute.
func (s *server) serveTCP(l net.Listener) {
	port := l.Addr().(*net.TCPAddr).Port
	s.log.Info("listening", "proto", "tcp", "addr", l.Addr().String())
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go s.handleTCP(c, port)
	}
}

func (s *server) handleTCP(c net.Conn, port int) {
	defer c.Close()
	s.log.Info("tcp-connect", "proto", "tcp", "port", port, "remote", c.RemoteAddr().String())
	fmt.Fprintf(c, "testsrv %s tcp/%d\n", s.name, port)
	sc := bufio.NewScanner(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		if !sc.Scan() {
			return
		}
		line := sc.Text()
		s.log.Info("tcp-data", "proto", "tcp", "port", port, "remote", c.RemoteAddr().String(), "data", clip(line))
		if _, err := fmt.Fprintln(c, line); err != nil {
			return
		}
	}
}

// serveUDP answers every datagram with "testsrv <name> udp/<port>: <payload>".
func (s *server) serveUDP(pc net.PacketConn) {
	port := pc.LocalAddr().(*net.UDPAddr).Port
	s.log.Info("listening", "proto", "udp", "addr", pc.LocalAddr().String())
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.log.Info("udp", "proto", "udp", "port", port, "remote", from.String(), "data", clip(string(buf[:n])))
		reply := fmt.Appendf(nil, "testsrv %s udp/%d: %s", s.name, port, buf[:n])
		_, _ = pc.WriteTo(reply, from)
	}
}

func clip(s string) string {
	if len(s) > maxLogged {
		return s[:maxLogged] + "…"
	}
	return s
}

// serveRaw accepts connections that it never writes to, and logs each read: its size and, hex
// encoded, its first bytes. Nothing is buffered until a line ends, so a partial ClientHello
// that arrived is in the log.
func (s *server) serveRaw(l net.Listener) {
	port := l.Addr().(*net.TCPAddr).Port
	s.log.Info("listening", "proto", "raw", "addr", l.Addr().String())
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go func() {
			defer c.Close()
			s.log.Info("raw-connect", "proto", "raw", "port", port, "remote", c.RemoteAddr().String())
			buf := make([]byte, 64<<10)
			for {
				_ = c.SetReadDeadline(time.Now().Add(time.Minute))
				n, err := c.Read(buf)
				if n > 0 {
					s.log.Info("raw-data", "proto", "raw", "port", port, "remote", c.RemoteAddr().String(),
						"bytes", n, "head", hex.EncodeToString(buf[:min(n, maxLogged/2)]))
				}
				if err != nil {
					return
				}
			}
		}()
	}
}
