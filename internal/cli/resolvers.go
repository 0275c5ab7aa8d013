package cli

import (
	"bufio"
	"net/netip"
	"os"
	"strings"
)

// resolvConfs are where the host's resolvers are listed: the usual file, and systemd-resolved's
// list of its real upstreams for hosts whose resolv.conf names only its local stub.
var resolvConfs = []string{"/etc/resolv.conf", "/run/systemd/resolve/resolv.conf"}

// hostResolvers returns the host's IPv4, non-loopback DNS servers as "a.b.c.d:53". netd asks
// them for names Docker's embedded resolver would have to forward. $ABOX_RESOLV_CONF replaces
// the files read (tests, unusual hosts).
func (a *App) hostResolvers() []string {
	files := resolvConfs
	if f := a.getenv("ABOX_RESOLV_CONF"); f != "" {
		files = []string{f}
	}
	for _, f := range files {
		if out := parseResolvConf(f); len(out) > 0 {
			return out
		}
	}
	return nil
}

func parseResolvConf(path string) []string {
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
		if s := netip.AddrPortFrom(addr, 53).String(); !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
