//go:build e2e

package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// dnsAnswer parses -dns-answer, defaulting to this server's first non-loopback IPv4 address so
// that every name resolves back to it.
func dnsAnswer(flag string) (net.IP, error) {
	if flag != "" {
		ip := net.ParseIP(flag).To4()
		if ip == nil {
			return nil, fmt.Errorf("-dns-answer: %q is not an IPv4 address", flag)
		}
		return ip, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.To4(), nil
		}
	}
	return net.IPv4(127, 0, 0, 1).To4(), nil
}

// dnsHandler answers every A query with one address and every other type with an empty
// NOERROR, and logs each query: tests use the log to prove a query never arrived.
type dnsHandler struct {
	s      *server
	answer net.IP
	ttl    uint32
	spread int // >0: that many addresses per answer, see -dns-spread
	// mapFile (-dns-map), if set, is read for every query: "name address" lines.
	mapFile string
	delay   time.Duration // before each answer, see -dns-delay

	mu      sync.Mutex
	queries uint32 // of names starting with "rot", which get new addresses every time
}

// spreadAnswer returns n addresses in 198.18.0.0/15 (the benchmarking range: never a real host,
// and nothing connects to them) that depend on the name, and for a "rot" name on the query too.
func (h *dnsHandler) spreadAnswer(name string) []net.IP {
	sum := fnv.New32a()
	sum.Write([]byte(strings.ToLower(name)))
	base := sum.Sum32()
	if strings.HasPrefix(strings.ToLower(name), "rot") {
		h.mu.Lock()
		h.queries++
		base += h.queries * uint32(h.spread)
		h.mu.Unlock()
	}
	out := make([]net.IP, h.spread)
	for i := range out {
		v := (base*uint32(h.spread) + uint32(i)) % (1 << 17)
		out[i] = net.IPv4(198, 18+byte(v>>16), byte(v>>8), byte(v))
	}
	return out
}

// mapped returns the address -dns-map gives name, or nil.
func (h *dnsHandler) mapped(name string) net.IP {
	if h.mapFile == "" {
		return nil
	}
	data, err := os.ReadFile(h.mapFile)
	if err != nil {
		return nil
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && strings.EqualFold(f[0], strings.TrimSuffix(name, ".")) {
			return net.ParseIP(f[1]).To4()
		}
	}
	return nil
}

func (h *dnsHandler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	time.Sleep(h.delay)
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	for _, q := range req.Question {
		h.s.log.Info("dns", "proto", "dns/"+w.RemoteAddr().Network(), "name", strings.TrimSuffix(q.Name, "."),
			"type", dns.TypeToString[q.Qtype], "remote", w.RemoteAddr().String())
		if q.Qtype != dns.TypeA || q.Qclass != dns.ClassINET {
			continue
		}
		answers := []net.IP{h.answer}
		if h.spread > 0 {
			answers = h.spreadAnswer(q.Name)
		}
		if a := h.mapped(q.Name); a != nil {
			answers = []net.IP{a}
		}
		for _, a := range answers {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: h.ttl},
				A:   a,
			})
		}
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		// As a real server does: what does not fit the client's buffer is cut and marked
		// truncated, so the client asks again over TCP.
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		m.Truncate(size)
	}
	_ = w.WriteMsg(m)
}

// serveDNS serves DNS on pc (udp) and l (tcp) until ctx ends. Both are already listening, so
// the server is reachable when serveDNS returns.
func (s *server) serveDNS(ctx context.Context, pc net.PacketConn, l net.Listener, h *dnsHandler) {
	s.log.Info("listening", "proto", "dns", "udp", pc.LocalAddr().String(), "tcp", l.Addr().String(), "answer", h.answer.String(), "spread", h.spread)
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}} {
		go func() { _ = srv.ActivateAndServe() }()
		go func() {
			<-ctx.Done()
			_ = srv.Shutdown()
		}()
	}
}
