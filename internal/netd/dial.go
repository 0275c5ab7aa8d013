package netd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// lookuper resolves a canonical name to its IPv4 addresses and the TTL of the answer.
type lookuper interface {
	lookupA(ctx context.Context, name string) ([]netip.Addr, time.Duration, error)
}

// upstreamDialer connects netd to a name it resolves itself: the agent never chooses the address.
// Before dialing it asks for the addresses to be opened in [policy.SetNetd], the only set netd's
// own uid may reach, for as long as the DNS answer is valid.
type upstreamDialer struct {
	res     lookuper
	sets    setAdder
	timeout time.Duration // for resolving, opening and connecting together
	// allowed decides whether netd may connect to an address a name resolved to; nil allows
	// all (tests, whose servers are on loopback). netd's is [destinationCheck].
	allowed func(netip.Addr) error
}

// dialTimeout bounds how long netd spends reaching an upstream.
const dialTimeout = 10 * time.Second

// dial connects to name:port and returns the connection. name is canonical, or an IP literal.
// Addresses [upstreamDialer.allowed] refuses are skipped; a name that resolves to nothing else
// is not connected to at all. Each address is opened in netd's set just before it is tried,
// alone and for [dialOpenTimeout] only: conntrack carries a connection once it is established,
// so a flood of names with many addresses each cannot fill the set for their TTLs. Loopback
// addresses (in tests) are not opened: the ruleset accepts them anyway.
func (d *upstreamDialer) dial(ctx context.Context, name string, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	addrs, _, err := d.resolve(ctx, name)
	if err != nil {
		return nil, err
	}
	if addrs, err = d.filter(name, addrs); err != nil {
		return nil, err
	}
	var errs []error
	var nd net.Dialer
	for _, a := range addrs {
		if !a.IsLoopback() {
			req := setRequest{Set: policy.SetNetd, Name: name, Addrs: []netip.Addr{a}, Ports: []int{port}, Timeout: dialOpenTimeout}
			if err := d.sets.addElements(ctx, req); err != nil {
				return nil, fmt.Errorf("opening %s: %w", name, err)
			}
		}
		c, err := nd.DialContext(ctx, "tcp4", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("connecting to %s:%d: %w", name, port, errors.Join(errs...))
}

// dialOpenTimeout is how long, in seconds, an address netd dials stays open in its set: enough
// for the connection to be made, after which conntrack carries it.
const dialOpenTimeout = minElemTimeout

// filter drops the addresses netd may not connect to, and fails when none is left.
func (d *upstreamDialer) filter(name string, addrs []netip.Addr) ([]netip.Addr, error) {
	if d.allowed == nil {
		return addrs, nil
	}
	var ok []netip.Addr
	var errs []error
	for _, a := range addrs {
		if err := d.allowed(a); err != nil {
			errs = append(errs, err)
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("%s resolves to no address netd may connect to: %w", name, errors.Join(errs...))
	}
	return ok, nil
}

// destinationCheck is what netd allows as a destination of a name it resolved: an address a set
// may hold ([checkElemAddr]: no loopback, link-local, multicast, broadcast…), and none of the
// reserved ones — the namespace's own addresses (the agent listens there) and the gateway's,
// whose only client is the MCP forwarder.
func destinationCheck(cfg *current, own []netip.Addr) func(netip.Addr) error {
	forwarder := modelDestinationCheck(cfg, own)
	return func(a netip.Addr) error {
		if m := cfg.get().modelAddr; m.IsValid() && a == m {
			return fmt.Errorf("%w: %v is the model API upstream's address, which only netd's model forwarder reaches", errReserved, a)
		}
		return forwarder(a)
	}
}

// modelDestinationCheck is [destinationCheck] for the model forwarder alone: the upstream's own
// address, when the policy names it by one, is the forwarder's to dial.
func modelDestinationCheck(cfg *current, own []netip.Addr) func(netip.Addr) error {
	return func(a netip.Addr) error {
		if err := checkElemAddr(a); err != nil {
			return err
		}
		return reservedAddrs(own, cfg.get().gateway).check(a)
	}
}

func (d *upstreamDialer) resolve(ctx context.Context, name string) ([]netip.Addr, time.Duration, error) {
	if a, err := netip.ParseAddr(name); err == nil {
		if !a.Is4() {
			return nil, 0, fmt.Errorf("%s is not an IPv4 address", name)
		}
		return []netip.Addr{a}, minElemTimeout * time.Second, nil
	}
	addrs, ttl, err := d.res.lookupA(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	return addrs[:min(len(addrs), maxReqAddrs)], ttl, nil
}
