package netd

import (
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// originalDst returns where a connection redirected by the ruleset's nat chain was aimed
// (SO_ORIGINAL_DST), or "" if that is unknown. It is for the log only: netd never connects there.
func originalDst(c *net.TCPConn) string {
	rc, err := c.SyscallConn()
	if err != nil {
		return ""
	}
	var out string
	rc.Control(func(fd uintptr) {
		mreq, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if err != nil {
			return
		}
		// A struct sockaddr_in: family (2 bytes), port (big endian), address.
		port := uint16(mreq.Multiaddr[2])<<8 | uint16(mreq.Multiaddr[3])
		addr := netip.AddrFrom4([4]byte(mreq.Multiaddr[4:8]))
		out = netip.AddrPortFrom(addr, port).String()
	})
	return out
}
