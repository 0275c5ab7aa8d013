//go:build e2e

package main

import (
	"context"
	"fmt"
	"net"
	"strings"

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
}

func (h *dnsHandler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	for _, q := range req.Question {
		h.s.log.Info("dns", "proto", "dns/"+w.RemoteAddr().Network(), "name", strings.TrimSuffix(q.Name, "."),
			"type", dns.TypeToString[q.Qtype], "remote", w.RemoteAddr().String())
		if q.Qtype == dns.TypeA && q.Qclass == dns.ClassINET {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: h.ttl},
				A:   h.answer,
			})
		}
	}
	_ = w.WriteMsg(m)
}

// serveDNS serves DNS on pc (udp) and l (tcp) until ctx ends. Both are already listening, so
// the server is reachable when serveDNS returns.
func (s *server) serveDNS(ctx context.Context, pc net.PacketConn, l net.Listener, answer net.IP, ttl uint32) {
	h := &dnsHandler{s: s, answer: answer, ttl: ttl}
	s.log.Info("listening", "proto", "dns", "udp", pc.LocalAddr().String(), "tcp", l.Addr().String(), "answer", answer.String())
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}} {
		go func() { _ = srv.ActivateAndServe() }()
		go func() {
			<-ctx.Done()
			_ = srv.Shutdown()
		}()
	}
}
