package netd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/policy"
)

// setAdder opens (address . port) pairs in one of the ruleset's sets. The child holds one that
// asks the supervisor; tests hold fakes.
type setAdder interface {
	addElements(ctx context.Context, req setRequest) error
}

// setRequest asks for every pair of Addrs × Ports in Set, for Timeout seconds. In the agent and
// TLS sets, Name is the canonical name the addresses were resolved for: the supervisor checks that it is
// allowed on every port, and revokes the pairs once no name that asked for them is allowed any
// more.
type setRequest struct {
	Set     string       `json:"set"`
	Name    string       `json:"name,omitempty"`
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

// setRules are what the supervisor lets the child open: the ports per set, and the allowlist the
// names of agent-set requests are checked against. They come from the policy, so a compromised
// child cannot open a port no allowlist entry names, nor open one for a name not allowed on it.
type setRules struct {
	ports map[string]map[int]bool
	list  *egress.List
	// model is the model upstream's address when the policy names it by one
	// ([policy.Netd.ModelAddr]): never opened in the agent's set, whatever name asks.
	model netip.Addr
}

// rulesFromPolicy derives [setRules]: the agent set gets every allowed port but 443 and 80 (those
// always go through netd's proxies); netd's own set gets 443 and 80 when allowed. The MCP
// gateway's address is no request's business: the supervisor opens it itself.
func rulesFromPolicy(p *policy.Netd) (setRules, error) {
	list, err := p.List()
	if err != nil {
		return setRules{}, err
	}
	// The TLS set opens 443 for the agent's held flows ("The TLS fast path") of the names allowed
	// on it; the serving child asks for it only when the supervisor holds the queue.
	agent, netd, tls := map[int]bool{}, map[int]bool{}, map[int]bool{}
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
			if port == 443 {
				tls[port] = true
			}
		}
	}
	if p.MCP != nil {
		if _, err := mcpUpstream(p.MCP); err != nil {
			return setRules{}, err
		}
	}
	// The model upstream is netd's alone: its port opens in netd's set, never the agent's.
	if p.Model != nil {
		u, err := policy.ModelUpstream(p.Model.Upstream)
		if err != nil {
			return setRules{}, err
		}
		port, _ := strconv.Atoi(u.Port())
		netd[port] = true
	}
	return setRules{ports: map[string]map[int]bool{policy.SetAgent: agent, policy.SetNetd: netd, policy.SetTLS: tls}, list: list, model: p.ModelAddr()}, nil
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
// addresses, 1–16 ports the policy allows in that set, a timeout of 1–86400 s, and in the agent
// and TLS sets a canonical name allowed on each port.
func (r setRequest) validate(rules setRules) error {
	ports, ok := rules.ports[r.Set]
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
	if !agentFacing(r.Set) {
		return nil
	}
	if rules.model.IsValid() && slices.Contains(r.Addrs, rules.model) {
		return fmt.Errorf("address %v is the model API upstream's: only netd's model forwarder reaches it", rules.model)
	}
	if name, ok := egress.NormalizeName(r.Name); !ok || name != r.Name {
		return fmt.Errorf("name %q is not a canonical host name", r.Name)
	}
	for _, p := range r.Ports {
		if !rules.list.Allows(r.Name, p) {
			return fmt.Errorf("%s is not allowed on port %d", r.Name, p)
		}
	}
	return nil
}

// agentFacing reports whether set opens addresses to the agent: [policy.SetAgent] (non-TLS
// ports) and [policy.SetTLS] (443, for held TLS flows). Their elements are opened per name,
// checked against the allowlist, and revoked with it.
func agentFacing(set string) bool { return set == policy.SetAgent || set == policy.SetTLS }

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
