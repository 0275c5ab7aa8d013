package netd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// resolver asks the upstream resolver (Docker's embedded DNS, which only netd's uid may reach)
// for the agent's allowed names and for netd's own connections. Lookups for netd's own use are
// cached briefly: a proxy opening many connections to one name should not query each time.
type resolver struct {
	upstream string // host:port
	// fallbacks returns the host's resolvers, asked when upstream cannot answer: Docker's
	// resolver forwards a name it does not know as root from the sandbox's namespace, which the
	// ruleset refuses, and then answers SERVFAIL. nil: none.
	fallbacks func() []string
	udp, tcp  *dns.Client
	// fromUDP and fromTCP ask the loopback upstream (Docker's resolver) from
	// policy.NetdSource, an address the ruleset lets nobody but netd send from: no flow the
	// agent opens, or plants, can ever share a five-tuple with one of these queries. Nil: the
	// ordinary clients (tests).
	fromUDP, fromTCP *dns.Client
	now              func() time.Time
	// local are the sandbox's own networks. An answer from the host's resolvers (the
	// internet's names) never points into them: only Docker's resolver names containers there,
	// and an address of the network in a public zone is DNS rebinding toward the gateway, the
	// MCP servers and the other sandboxes.
	local []netip.Prefix

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	addrs   []netip.Addr
	ttl     time.Duration
	expires time.Time
}

// Cache bounds: an entry lives for its TTL within these bounds; the map holds at most
// maxCached names.
const (
	minCacheTTL = 5 * time.Second
	maxCacheTTL = 60 * time.Second
	maxCached   = 4096
	dnsTimeout  = 5 * time.Second
	// dockerDNSTimeout bounds the wait for Docker's resolver before the host's are asked.
	dockerDNSTimeout = 800 * time.Millisecond
)

func newResolver(upstream string) *resolver {
	return &resolver{
		upstream: upstream,
		udp:      &dns.Client{Net: "udp", Timeout: dnsTimeout},
		tcp:      &dns.Client{Net: "tcp", Timeout: dnsTimeout},
		now:      time.Now,
		cache:    map[string]cached{},
	}
}

// exchange sends one recursive question for the canonical name upstream, over UDP and again over
// TCP if the answer was truncated. When upstream fails or cannot answer (SERVFAIL, REFUSED), it
// asks the fallbacks in turn.
func (r *resolver) exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	// Docker answers the names it knows at once and can never forward the others (the ruleset
	// refuses it), so when there are fallbacks it gets a short time before they are asked.
	uctx := ctx
	if r.fallbacks != nil && len(r.fallbacks()) > 0 {
		var cancel context.CancelFunc
		uctx, cancel = context.WithTimeout(ctx, dockerDNSTimeout)
		defer cancel()
	}
	in, err := r.ask(uctx, r.upstream, name, qtype)
	if err == nil && in.Rcode != dns.RcodeServerFailure && in.Rcode != dns.RcodeRefused {
		return in, nil
	}
	if r.fallbacks == nil {
		return in, err
	}
	for _, server := range r.fallbacks() {
		fin, ferr := r.ask(ctx, server, name, qtype)
		if ferr == nil && fin.Rcode != dns.RcodeServerFailure && fin.Rcode != dns.RcodeRefused {
			fin.Answer = r.outsideLocal(fin.Answer)
			return fin, nil
		}
	}
	return in, err
}

// askFrom makes the resolver ask its upstream from src.
func (r *resolver) askFrom(src netip.Addr) {
	ip := net.IP(src.AsSlice())
	r.fromUDP = &dns.Client{Net: "udp", Timeout: dnsTimeout, Dialer: &net.Dialer{Timeout: dnsTimeout, LocalAddr: &net.UDPAddr{IP: ip}}}
	r.fromTCP = &dns.Client{Net: "tcp", Timeout: dnsTimeout, Dialer: &net.Dialer{Timeout: dnsTimeout, LocalAddr: &net.TCPAddr{IP: ip}}}
}

// outsideLocal drops the A records that point into the sandbox's own networks.
func (r *resolver) outsideLocal(rrs []dns.RR) []dns.RR {
	if len(r.local) == 0 {
		return rrs
	}
	return slices.DeleteFunc(rrs, func(rr dns.RR) bool {
		a, ok := rr.(*dns.A)
		if !ok {
			return false
		}
		ip, _ := netip.AddrFromSlice(a.A.To4())
		return slices.ContainsFunc(r.local, func(p netip.Prefix) bool { return p.Contains(ip) })
	})
}

// localNetworks returns the IPv4 networks of the namespace's interfaces other than loopback.
func localNetworks() []netip.Prefix {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ones, _ := n.Mask.Size()
		if ip, ok := netip.AddrFromSlice(n.IP.To4()); ok && !ip.IsLoopback() {
			out = append(out, netip.PrefixFrom(ip, ones).Masked())
		}
	}
	return out
}

// ask sends one question to server.
func (r *resolver) ask(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.RecursionDesired = true
	udp, tcp := r.udp, r.tcp
	if server == r.upstream && r.fromUDP != nil {
		udp, tcp = r.fromUDP, r.fromTCP
	}
	in, _, err := udp.ExchangeContext(ctx, q, server)
	if err == nil && in.Truncated {
		in, _, err = tcp.ExchangeContext(ctx, q, server)
	}
	if err != nil {
		return nil, fmt.Errorf("asking %s for %s: %w", server, name, err)
	}
	if in.Id != q.Id || len(in.Question) != 1 || !strings.EqualFold(in.Question[0].Name, q.Question[0].Name) {
		return nil, fmt.Errorf("asking %s for %s: mismatched answer", server, name)
	}
	return in, nil
}

// lookupA returns the IPv4 addresses of a canonical name and the smallest TTL of the answer.
func (r *resolver) lookupA(ctx context.Context, name string) ([]netip.Addr, time.Duration, error) {
	if c, ok := r.fromCache(name); ok {
		return c.addrs, c.ttl, nil
	}
	in, err := r.exchange(ctx, name, dns.TypeA)
	if err != nil {
		return nil, 0, err
	}
	if in.Rcode != dns.RcodeSuccess {
		return nil, 0, fmt.Errorf("resolving %s: %s", name, dns.RcodeToString[in.Rcode])
	}
	addrs, ttl := answerA(in.Answer)
	if len(addrs) == 0 {
		return nil, 0, fmt.Errorf("resolving %s: no IPv4 address", name)
	}
	r.store(name, cached{addrs: addrs, ttl: ttl, expires: r.now().Add(min(max(ttl, minCacheTTL), maxCacheTTL))})
	return addrs, ttl, nil
}

// answerA returns the A records of an answer section and its smallest TTL over A and CNAME
// records.
func answerA(rrs []dns.RR) ([]netip.Addr, time.Duration) {
	var addrs []netip.Addr
	ttl := uint32(0)
	first := true
	for _, rr := range rrs {
		switch v := rr.(type) {
		case *dns.A:
			if a, ok := netip.AddrFromSlice(v.A.To4()); ok {
				addrs = append(addrs, a)
			}
		case *dns.CNAME:
		default:
			continue
		}
		if first || rr.Header().Ttl < ttl {
			ttl, first = rr.Header().Ttl, false
		}
	}
	return addrs, time.Duration(ttl) * time.Second
}

func (r *resolver) fromCache(name string) (cached, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[name]
	if !ok || !r.now().Before(c.expires) {
		return cached{}, false
	}
	return c, true
}

func (r *resolver) store(name string, c cached) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= maxCached {
		now := r.now()
		for k, v := range r.cache {
			if !now.Before(v.expires) {
				delete(r.cache, k)
			}
		}
		if len(r.cache) >= maxCached {
			clear(r.cache)
		}
	}
	r.cache[name] = c
}
