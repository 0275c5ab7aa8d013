package gateway

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/aboxhq/abox/internal/docker"
)

// ErrNoAddress marks a gateway container without a usable address on the sandbox's network.
var ErrNoAddress = errors.New("the gateway has no address on the network")

// Address returns where netd reaches the gateway container c: its IPv4 address on network, as
// the Docker daemon reports it, and port. netd dials that address and never resolves the
// gateway's name, which the agent, sharing netd's network namespace, could try to answer; so
// anything else than a plain unicast IPv4 address of a running container is refused here.
func Address(c *docker.Container, network string, port int) (netip.AddrPort, error) {
	if c == nil || !c.State.Running {
		return netip.AddrPort{}, fmt.Errorf("%w %s: it is not running", ErrNoAddress, network)
	}
	n, ok := c.NetworkSettings.Networks[network]
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%w %s: it is not attached to it", ErrNoAddress, network)
	}
	a, err := netip.ParseAddr(n.IPAddress)
	switch {
	case err != nil:
		return netip.AddrPort{}, fmt.Errorf("%w %s: %q is not an address", ErrNoAddress, network, n.IPAddress)
	case !a.Is4() || !a.IsGlobalUnicast() || a.IsLoopback():
		return netip.AddrPort{}, fmt.Errorf("%w %s: %v is not a unicast IPv4 address", ErrNoAddress, network, a)
	case port < 1 || port > 65535:
		return netip.AddrPort{}, fmt.Errorf("%w %s: port %d", ErrNoAddress, network, port)
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}
