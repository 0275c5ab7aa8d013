package netd

import (
	"context"
	"fmt"
	"net/netip"
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
	udp, tcp *dns.Client
	now      func() time.Time

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
// TCP if the answer was truncated.
func (r *resolver) exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.RecursionDesired = true
	in, _, err := r.udp.ExchangeContext(ctx, q, r.upstream)
	if err == nil && in.Truncated {
		in, _, err = r.tcp.ExchangeContext(ctx, q, r.upstream)
	}
	if err != nil {
		return nil, fmt.Errorf("asking %s for %s: %w", r.upstream, name, err)
	}
	if in.Id != q.Id || len(in.Question) != 1 || !strings.EqualFold(in.Question[0].Name, q.Question[0].Name) {
		return nil, fmt.Errorf("asking %s for %s: mismatched answer", r.upstream, name)
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
