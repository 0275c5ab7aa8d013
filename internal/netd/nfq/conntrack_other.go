//go:build !linux

package nfq

import (
	"errors"
	"net/netip"
	"time"
)

// LookupTimeout bounds one [Conntrack.Lookup] on Linux.
const LookupTimeout = time.Second

// Conntrack is Linux-only: conntrack is the Linux kernel's, and netd runs on Linux.
type Conntrack struct{}

var errNoConntrack = errors.New("nfq: conntrack exists only on Linux")

// OpenConntrack fails: there is no conntrack here.
func OpenConntrack() (*Conntrack, error) { return nil, errNoConntrack }

// LookupFlow fails: there is no conntrack here.
func LookupFlow(netip.AddrPort, netip.AddrPort) (uint32, bool, error) {
	return 0, false, errNoConntrack
}

// Lookup fails: there is no conntrack here.
func (*Conntrack) Lookup(netip.AddrPort, netip.AddrPort) (uint32, bool, error) {
	return 0, false, errNoConntrack
}

// Close does nothing here.
func (*Conntrack) Close() error { return nil }
