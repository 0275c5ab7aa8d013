//go:build !linux

package netd

import "net"

// originalDst is only known on Linux, where netd runs.
func originalDst(*net.TCPConn) string { return "" }
