package cli

import "github.com/aboxhq/abox/internal/hostprobe"

// hostResolvers returns the host's IPv4, non-loopback DNS servers as "a.b.c.d:53". netd asks
// them for names Docker's embedded resolver would have to forward. $ABOX_RESOLV_CONF replaces
// the files read (tests, unusual hosts).
func (a *App) hostResolvers() []string {
	if f := a.getenv("ABOX_RESOLV_CONF"); f != "" {
		return hostprobe.ResolvConf(f)
	}
	return a.probe().Resolvers()
}
