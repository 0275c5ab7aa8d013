package netd

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/policy"
)

// The namespace netd owns is shared with the agent, so before it serves, netd checks the one
// kernel setting that decides who may bind a port there (see the package doc), and works out the
// addresses that must never become a destination netd opens for anyone.

// checkNamespace refuses to serve unless ports below policy.UnprivilegedPortStart need a
// capability in this namespace: Docker starts a container with every port unprivileged, and
// then the agent could bind 127.0.0.11:53 and answer netd's upstream queries. procSys is the
// /proc/sys directory. The setting must also stay at or below netd's own ports, which its
// serving child binds without capabilities.
func checkNamespace(procSys string) error {
	path := filepath.Join(procSys, strings.ReplaceAll(policy.UnprivilegedPortSysctl, ".", "/"))
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w (the netd container needs --sysctl %s=%d)", policy.UnprivilegedPortSysctl, err,
			policy.UnprivilegedPortSysctl, policy.UnprivilegedPortStart)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return fmt.Errorf("%s is %q, not a number", policy.UnprivilegedPortSysctl, strings.TrimSpace(string(raw)))
	}
	lowest := min(policy.DNSPort, policy.SNIPort, policy.HTTPPort, policy.MCPPort)
	if v < policy.UnprivilegedPortStart || v > lowest {
		return fmt.Errorf("%s is %d: ports below %d must need a capability in the sandbox's namespace, and netd's own (from %d) must not; "+
			"the netd container needs --sysctl %s=%d", policy.UnprivilegedPortSysctl, v, policy.UnprivilegedPortStart, lowest,
			policy.UnprivilegedPortSysctl, policy.UnprivilegedPortStart)
	}
	return nil
}

// parseGateway reads the --gateway-addr flag: the MCP gateway container's IPv4 address and port
// on the sandbox's network, as abox inspected it. "" means the run has no gateway.
func parseGateway(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("--gateway-addr %q: %v", s, err)
	}
	if err := checkElemAddr(ap.Addr()); err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("--gateway-addr %q is not a unicast IPv4 address and port", s)
	}
	return ap, nil
}

// ownAddrs returns the IPv4 addresses of this namespace's interfaces other than loopback, and
// the gateway of its default route: connecting to one of the first reaches the namespace
// itself, where the agent listens; the second is the Docker host on the sandbox's network, whose
// services no allowed name has a reason to resolve to.
func ownAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing the namespace's addresses: %w", err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip, ok := netip.AddrFromSlice(n.IP.To4()); ok && !ip.IsLoopback() {
			out = append(out, ip)
		}
	}
	if route, err := os.ReadFile("/proc/net/route"); err == nil {
		out = append(out, defaultGateways(string(route))...)
	}
	return out, nil
}

// defaultGateways reads the gateways of the default routes from /proc/net/route, whose
// addresses are little-endian hex.
func defaultGateways(route string) []netip.Addr {
	var out []netip.Addr
	for _, line := range strings.Split(route, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "00000000" {
			continue
		}
		v, err := strconv.ParseUint(f[2], 16, 32)
		if err != nil || v == 0 {
			continue
		}
		out = append(out, netip.AddrFrom4([4]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}))
	}
	return out
}

// errReserved marks an address netd never opens or dials for a name: the gateway's (reached
// only by the MCP forwarder, at the address abox gave), and the namespace's own.
var errReserved = errors.New("reserved address")

// reserved is a set of addresses no name may resolve to, as far as netd is concerned.
type reserved map[netip.Addr]string

// check returns an error wrapping [errReserved] when a is in r.
func (r reserved) check(a netip.Addr) error {
	if why, ok := r[a]; ok {
		return fmt.Errorf("%w: %v is %s", errReserved, a, why)
	}
	return nil
}

// reservedAddrs are the addresses of the namespace itself and of the gateway.
func reservedAddrs(own []netip.Addr, gateway netip.AddrPort) reserved {
	r := reserved{}
	for _, a := range own {
		r[a] = "this sandbox's own address or the Docker host's on its network"
	}
	if gateway.IsValid() {
		r[gateway.Addr()] = "the MCP gateway's address"
	}
	return r
}
