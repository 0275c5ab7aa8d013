package nfq

import "errors"

// Config says which queue to bind and how much the kernel may hold for it.
type Config struct {
	// Num is the queue number, as the ruleset's `queue num` names it.
	Num uint16
	// MaxLen is how many packets the kernel holds awaiting a verdict; past it, new packets
	// are dropped. 0 means [DefaultMaxLen].
	MaxLen uint32
	// RecvBuffer is the socket's receive buffer in bytes; when it is full the kernel drops
	// the packets it cannot deliver. 0 means [DefaultRecvBuffer].
	RecvBuffer int
}

// Defaults of [Config].
const (
	DefaultMaxLen     = 1024 // the kernel's own default (NFQNL_QMAX_DEFAULT)
	DefaultRecvBuffer = 4 << 20
)

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.MaxLen == 0 {
		c.MaxLen = DefaultMaxLen
	}
	if c.RecvBuffer == 0 {
		c.RecvBuffer = DefaultRecvBuffer
	}
	return c
}

// Stats counts what went wrong on a queue without stopping it. Every count is of packets
// dropped or never decided, so none of them let a packet through.
type Stats struct {
	// Overruns counts ENOBUFS on receive: the socket's buffer was full and the kernel
	// dropped one or more queued packets it could not deliver.
	Overruns uint64
	// VerdictErrors counts verdicts the kernel refused, most often for a packet id it no
	// longer holds (a second verdict for one packet).
	VerdictErrors uint64
	// Malformed counts messages from the kernel that did not decode.
	Malformed uint64
}

// ErrClosed is returned by a [Queue]'s methods after [Queue.Close].
var ErrClosed = errors.New("nfq: queue closed")
