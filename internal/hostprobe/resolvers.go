package hostprobe

import (
	"bufio"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// resolvConfs are where the host's resolvers are listed: the usual file, and systemd-resolved's
// list of its real upstreams for hosts whose resolv.conf names only its local stub.
var resolvConfs = []string{"/etc/resolv.conf", "/run/systemd/resolve/resolv.conf"}

// Resolvers implements [Probe]: the servers of the first of the host's resolver lists that
// names any.
func (System) Resolvers() []string {
	for _, f := range resolvConfs {
		if out := ResolvConf(f); len(out) > 0 {
			return out
		}
	}
	return nil
}

// ResolvConf returns the IPv4, global unicast nameservers of the resolv.conf file at path as
// "a.b.c.d:53", each once, in order; nil when the file cannot be read. Loopback stubs, IPv6
// and anything else are left out: netd, in its own namespace, could not reach them.
func ResolvConf(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		addr, err := netip.ParseAddr(fields[1])
		if err != nil || !addr.Is4() || addr.IsLoopback() || !addr.IsGlobalUnicast() {
			continue
		}
		if s := netip.AddrPortFrom(addr, 53).String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
