package netd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// setAdder opens (address . port) pairs in one of the ruleset's sets. The child holds one that
// asks the supervisor; tests hold fakes.
type setAdder interface {
	addElements(ctx context.Context, req setRequest) error
}

// setRequest asks for every pair of Addrs × Ports in Set, for Timeout seconds.
type setRequest struct {
	Set     string       `json:"set"`
	Addrs   []netip.Addr `json:"addrs"`
	Ports   []int        `json:"ports"`
	Timeout int          `json:"timeout"`
}

// Bounds of the timeout, in seconds, of set elements netd adds for addresses it resolved.
const (
	minElemTimeout = 30
	maxElemTimeout = 3600
)

// clampTTL bounds a DNS TTL for use as a set element's timeout, in seconds.
func clampTTL(ttl time.Duration, lo, hi int) int {
	s := int(ttl / time.Second)
	return min(max(s, lo), hi)
}

// Limits of one [setRequest].
const (
	maxReqAddrs = 32
	maxReqPorts = 16
	maxTimeout  = 86400
)

// setPorts are the ports the supervisor lets the child open, per set. They come from the policy,
// so a compromised child cannot open a port no allowlist entry names.
type setPorts map[string]map[int]bool

// portsFromPolicy derives [setPorts]: the agent set gets every allowed port but 443 and 80 (those
// always go through netd's proxies); netd's own set gets 443 and 80 when allowed, and the MCP
// gateway's port.
func portsFromPolicy(p *policy.Netd) (setPorts, error) {
	list, err := p.List()
	if err != nil {
		return nil, err
	}
	agent, netd := map[int]bool{}, map[int]bool{}
	for _, e := range list.Entries() {
		ports := []int{e.Port}
		if e.Port == 0 {
			ports = list.DefaultPorts()
		}
		for _, port := range ports {
			if port == 443 || port == 80 {
				netd[port] = true
			} else {
				agent[port] = true
			}
		}
	}
	if p.MCP != nil {
		u, err := mcpUpstream(p.MCP)
		if err != nil {
			return nil, err
		}
		port, _ := strconv.Atoi(u.Port())
		netd[port] = true
	}
	return setPorts{policy.SetAgent: agent, policy.SetNetd: netd}, nil
}

// mcpUpstream parses and checks the gateway URL of the policy.
func mcpUpstream(m *policy.MCP) (*url.URL, error) {
	u, err := url.Parse(m.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return nil, fmt.Errorf("mcp upstream %q is not an http(s) URL", m.Upstream)
	}
	if u.Port() == "" {
		u.Host += map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("mcp upstream %q has an invalid port", m.Upstream)
	}
	return u, nil
}

// validate checks a request from the child: a known set, 1–32 public-enough IPv4 unicast
// addresses, 1–16 ports the policy allows in that set, and a timeout of 1–86400 s.
func (r setRequest) validate(allowed setPorts) error {
	ports, ok := allowed[r.Set]
	if !ok {
		return fmt.Errorf("unknown set %q", r.Set)
	}
	if len(r.Addrs) == 0 || len(r.Addrs) > maxReqAddrs {
		return fmt.Errorf("%d addresses, want 1–%d", len(r.Addrs), maxReqAddrs)
	}
	if len(r.Ports) == 0 || len(r.Ports) > maxReqPorts {
		return fmt.Errorf("%d ports, want 1–%d", len(r.Ports), maxReqPorts)
	}
	if r.Timeout < 1 || r.Timeout > maxTimeout {
		return fmt.Errorf("timeout %d s outside 1–%d", r.Timeout, maxTimeout)
	}
	for _, a := range r.Addrs {
		if err := checkElemAddr(a); err != nil {
			return err
		}
	}
	for _, p := range r.Ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("port %d outside 1–65535", p)
		}
		if !ports[p] {
			return fmt.Errorf("port %d is not allowed in set %s", p, r.Set)
		}
	}
	return nil
}

// checkElemAddr refuses what must never become reachable through a set: anything but IPv4
// unicast, and loopback (127.0.0.11 is Docker's resolver), link-local (cloud metadata),
// "this network", broadcast and the reserved class E.
func checkElemAddr(a netip.Addr) error {
	switch {
	case !a.Is4():
		return fmt.Errorf("address %v is not IPv4", a)
	case a.IsLoopback(), a.IsUnspecified(), a.IsMulticast(), a.IsLinkLocalUnicast(),
		netip.MustParsePrefix("0.0.0.0/8").Contains(a), netip.MustParsePrefix("240.0.0.0/4").Contains(a):
		return fmt.Errorf("address %v is not a unicast destination", a)
	}
	return nil
}

// elemKey is one element of a set.
type elemKey struct {
	set  string
	addr netip.Addr
	port int
}

// setManager applies validated requests with nft. It remembers when each element it added
// expires, and refreshes an element only when the request would keep it for noticeably longer,
// so a busy proxy does not run nft for every connection.
type setManager struct {
	nft nftRunner
	now func() time.Time

	mu      sync.Mutex
	expires map[elemKey]time.Time
}

func newSetManager(nft nftRunner) *setManager {
	return &setManager{nft: nft, now: time.Now, expires: map[elemKey]time.Time{}}
}

// maxTracked bounds the expiry map; past it, expired entries are pruned.
const maxTracked = 8192

// add applies a request that has passed [setRequest.validate].
func (m *setManager) add(ctx context.Context, r setRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	until := now.Add(time.Duration(r.Timeout) * time.Second)
	var stale []elemKey
	for _, a := range r.Addrs {
		for _, p := range r.Ports {
			k := elemKey{r.Set, a, p}
			// Refresh when less than three quarters of the requested time is left.
			if m.expires[k].Before(now.Add(time.Duration(r.Timeout) * time.Second * 3 / 4)) {
				stale = append(stale, k)
			}
		}
	}
	if len(stale) == 0 {
		return nil
	}
	if _, err := m.nft.run(ctx, setBatch(stale, r.Timeout), "-f", "-"); err != nil {
		return fmt.Errorf("adding to set %s: %w", r.Set, err)
	}
	for _, k := range stale {
		m.expires[k] = until
	}
	m.prune(now)
	return nil
}

func (m *setManager) prune(now time.Time) {
	if len(m.expires) <= maxTracked {
		return
	}
	for k, t := range m.expires {
		if t.Before(now) {
			delete(m.expires, k)
		}
	}
}

// setBatch renders an nft transaction that (re)sets the timeout of elems, which all belong to
// one set: nft 1.0.6 cannot change the timeout of an existing element, so add it (a no-op if
// present), delete it and add it again, all at once.
func setBatch(elems []elemKey, timeout int) []byte {
	set := elems[0].set
	list := func(suffix string) string {
		parts := make([]string, len(elems))
		for i, e := range elems {
			parts[i] = fmt.Sprintf("%s . %d%s", e.addr, e.port, suffix)
		}
		return strings.Join(parts, ", ")
	}
	prefix := fmt.Sprintf("element inet %s %s", policy.Table, set)
	return fmt.Appendf(nil, "add %s { %s }\ndelete %s { %s }\nadd %s { %s }\n",
		prefix, list(" timeout 1s"), prefix, list(""), prefix, list(fmt.Sprintf(" timeout %ds", timeout)))
}

// errNoSupervisor is returned to the child's requests once the control channel is gone.
var errNoSupervisor = errors.New("control channel closed")

// ctlSets is the child's [setAdder]: it sends each request to the supervisor and waits for the
// answer.
type ctlSets struct {
	ctl *ctlConn

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan string
	closed  bool
}

func newCtlSets(ctl *ctlConn) *ctlSets {
	return &ctlSets{ctl: ctl, pending: map[uint64]chan string{}}
}

func (s *ctlSets) addElements(ctx context.Context, req setRequest) error {
	req.Addrs = slices.Clone(req.Addrs)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errNoSupervisor
	}
	s.nextID++
	id, ch := s.nextID, make(chan string, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.pending, id); s.mu.Unlock() }()

	if err := s.ctl.send(message{Op: opAdd, ID: id, Set: &req}); err != nil {
		return err
	}
	select {
	case e := <-ch:
		if e != "" {
			return errors.New(e)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the supervisor: %w", ctx.Err())
	}
}

// resolve delivers a result message to the request waiting for it.
func (s *ctlSets) resolve(m message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.pending[m.ID]; ok {
		ch <- m.Error
		delete(s.pending, m.ID)
	}
}

// shut fails every waiting and future request.
func (s *ctlSets) shut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, ch := range s.pending {
		ch <- errNoSupervisor.Error()
	}
	s.pending = map[uint64]chan string{}
}
