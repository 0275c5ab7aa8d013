package netd

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/miekg/dns"
)

// serveFixed starts a UDP DNS server on loopback answering every A question with rcode, and
// with addr when rcode is success.
func serveFixed(t *testing.T, rcode int, addr string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Rcode = rcode
		if rcode == dns.RcodeSuccess {
			rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A " + addr)
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}

// TestResolverFallsBackToTheHostsResolvers: Docker's resolver answers SERVFAIL for a name it
// would have to forward (the ruleset refuses its forwarding as root); netd then asks the host's
// resolvers itself. Names Docker knows never reach them.
func TestResolverFallsBackToTheHostsResolvers(t *testing.T) {
	docker := serveFixed(t, dns.RcodeServerFailure, "")
	refusing := serveFixed(t, dns.RcodeRefused, "")
	host := serveFixed(t, dns.RcodeSuccess, "192.0.2.7")
	r := newResolver(docker)
	r.fallbacks = func() []string { return []string{refusing, host} }
	addrs, _, err := r.lookupA(context.Background(), "pkg.example.test")
	if err != nil || len(addrs) != 1 || addrs[0].String() != "192.0.2.7" {
		t.Fatalf("lookupA = %v, %v; want the host resolver's answer", addrs, err)
	}

	knows := serveFixed(t, dns.RcodeSuccess, "172.20.0.5")
	r = newResolver(knows)
	never := serveFixed(t, dns.RcodeSuccess, "192.0.2.66")
	r.fallbacks = func() []string { return []string{never} }
	if addrs, _, err := r.lookupA(context.Background(), "gateway.test"); err != nil || addrs[0].String() != "172.20.0.5" {
		t.Errorf("lookupA = %v, %v; want Docker's answer, not the fallback's", addrs, err)
	}

	nx := serveFixed(t, dns.RcodeNameError, "")
	r = newResolver(docker)
	r.fallbacks = func() []string { return []string{nx} }
	in, err := r.exchange(context.Background(), "nosuch.example.test", dns.TypeA)
	if err != nil || in.Rcode != dns.RcodeNameError {
		t.Errorf("exchange = %v, %v; want the fallback's NXDOMAIN", in, err)
	}
	r.fallbacks = nil
	if in, err := r.exchange(context.Background(), "x.example.test", dns.TypeA); err != nil || in.Rcode != dns.RcodeServerFailure {
		t.Errorf("without fallbacks: %v, %v; want Docker's SERVFAIL", in, err)
	}
}

// TestResolverKeepsPublicNamesOutOfTheSandboxNetwork: an answer of the host's resolvers that
// points into the sandbox's own network (a public zone rebinding toward the gateway, the MCP
// servers or another sandbox) loses those addresses; Docker's answers for its containers there
// keep theirs.
func TestResolverKeepsPublicNamesOutOfTheSandboxNetwork(t *testing.T) {
	local := []netip.Prefix{netip.MustParsePrefix("172.20.0.0/16")}
	docker := serveFixed(t, dns.RcodeServerFailure, "")
	rebind := serveFixed(t, dns.RcodeSuccess, "172.20.0.9")
	r := newResolver(docker)
	r.local = local
	r.fallbacks = func() []string { return []string{rebind} }
	if addrs, _, err := r.lookupA(context.Background(), "x.wild.example.test"); err == nil {
		t.Errorf("lookupA = %v: a public name resolved into the sandbox's network", addrs)
	}
	in, err := r.exchange(context.Background(), "x.wild.example.test", dns.TypeA)
	if err != nil || len(in.Answer) != 0 {
		t.Errorf("exchange = %v, %v; want the address dropped from the answer", in, err)
	}
	r.local = nil // the control: without the networks, the rebinding answer stands
	if in, _ := r.exchange(context.Background(), "y.wild.example.test", dns.TypeA); len(in.Answer) != 1 {
		t.Errorf("without local networks the answer is %v", in)
	}
	knows := serveFixed(t, dns.RcodeSuccess, "172.20.0.5")
	r = newResolver(knows)
	r.local = local
	if addrs, _, err := r.lookupA(context.Background(), "gateway.test"); err != nil || addrs[0].String() != "172.20.0.5" {
		t.Errorf("Docker's answer for a container = %v, %v; want it kept", addrs, err)
	}
}

// TestResolverAsksDockerFromNetdsSource: netd's queries to its upstream come from
// policy.NetdSource, the address the ruleset reserves to netd's uid; the host's resolvers are
// asked from the ordinary source.
func TestResolverAsksDockerFromNetdsSource(t *testing.T) {
	froms := make(chan string, 4)
	serve := func() string {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			froms <- w.RemoteAddr().(*net.UDPAddr).IP.String()
			m := new(dns.Msg)
			m.SetReply(r)
			m.Rcode = dns.RcodeServerFailure
			w.WriteMsg(m)
		})}
		go srv.ActivateAndServe()
		t.Cleanup(func() { srv.Shutdown() })
		return pc.LocalAddr().String()
	}
	docker, host := serve(), serve()
	r := newResolver(docker)
	r.askFrom(policy.NetdSource)
	r.fallbacks = func() []string { return []string{host} }
	r.exchange(context.Background(), "x.example.test", dns.TypeA)
	if got := <-froms; got != policy.NetdSource.String() {
		t.Errorf("Docker's resolver was asked from %s, want %s", got, policy.NetdSource)
	}
	if got := <-froms; got != "127.0.0.1" {
		t.Errorf("the host's resolver was asked from %s, want the ordinary source", got)
	}
}
