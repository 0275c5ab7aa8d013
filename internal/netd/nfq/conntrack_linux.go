package nfq

import (
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LookupTimeout bounds one [Conntrack.Lookup]. The kernel answers a get at once; a lookup
// still waiting after LookupTimeout has lost its answer, and fails rather than hang its caller.
const LookupTimeout = time.Second

// Conntrack asks the kernel's connection tracking about flows, over a NETLINK_NETFILTER socket
// of its own. Its methods are safe for concurrent use; lookups take turns on the socket.
type Conntrack struct {
	file *os.File // the netlink socket, non-blocking, in Go's poller for deadlines and Close
	conn syscall.RawConn

	mu  sync.Mutex // held through a lookup: one request and its answer at a time
	seq uint32
	buf []byte

	closed atomic.Bool
}

// errConntrackClosed is the error of a lookup on a closed [Conntrack].
var errConntrackClosed = fmt.Errorf("nfq: conntrack socket closed: %w", os.ErrClosed)

// ctRecvBufLen holds any answer to a get: the kernel builds it in an skb of
// NLMSG_DEFAULT_SIZE, less than 8 KiB.
const ctRecvBufLen = 16 << 10

// OpenConntrack opens a conntrack socket in the network namespace of the calling thread, where
// it stays whichever thread uses it later; its lookups see that namespace's entries. Reading
// them needs CAP_NET_ADMIN there.
func OpenConntrack() (*Conntrack, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK,
		unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nfq: opening a netfilter netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nfq: binding the netlink socket: %w", err)
	}
	c := &Conntrack{file: os.NewFile(uintptr(fd), "conntrack"), buf: make([]byte, ctRecvBufLen)}
	if c.conn, err = c.file.SyscallConn(); err != nil {
		c.file.Close()
		return nil, err
	}
	return c, nil
}

// LookupFlow opens a conntrack socket in the calling thread's namespace, looks up the IPv4 TCP
// flow src→dst with [Conntrack.Lookup] and closes the socket. A caller with more than one
// lookup to make should keep a [Conntrack] open instead.
func LookupFlow(src, dst netip.AddrPort) (mark uint32, found bool, err error) {
	c, err := OpenConntrack()
	if err != nil {
		return 0, false, err
	}
	defer c.Close()
	return c.Lookup(src, dst)
}

// Lookup asks for the conntrack entry whose original direction is the IPv4 TCP flow src→dst
// (in conntrack zone 0) and returns its mark, and found true, if there is one. No entry is
// found false with a nil error; every other failure is an error, after which a caller must
// assume nothing of the flow: the kernel's refusal, an answer that does not decode, no answer
// within [LookupTimeout], or the Conntrack closed (an error matching [os.ErrClosed]). An entry
// outlives its connection: a closed TCP connection's stays, in state TIME_WAIT or CLOSE, until
// conntrack's timeout for that state ends it.
func (c *Conntrack) Lookup(src, dst netip.AddrPort) (mark uint32, found bool, err error) {
	if src, dst, err = tcpFlow(src, dst); err != nil {
		return 0, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	m, err := c.request(c.seq, ctGetMessage(c.seq, src, dst))
	if err != nil {
		return 0, false, fmt.Errorf("nfq: conntrack lookup of %v → %v: %w", src, dst, err)
	}
	return ctAnswer(m, src, dst)
}

// request sends msg, numbered seq, and waits until [LookupTimeout] for the kernel's answer: the
// first message of that seq. One of another seq answers an earlier request that gave up
// waiting for it, and is read past. The answer is valid until the next request; c.mu must be
// held throughout.
func (c *Conntrack) request(seq uint32, msg []byte) (nlmsg, error) {
	err := c.file.SetDeadline(time.Now().Add(LookupTimeout))
	if err == nil {
		err = c.send(msg)
	}
	for err == nil {
		var msgs []nlmsg
		if msgs, err = c.read(); err != nil {
			break
		}
		for _, m := range msgs {
			if m.seq == seq {
				return m, nil
			}
		}
	}
	if c.closed.Load() {
		err = errConntrackClosed
	}
	return nlmsg{}, err
}

// send writes one message to the kernel.
func (c *Conntrack) send(msg []byte) error {
	var serr error
	err := c.conn.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	return serr
}

// read waits, until the deadline, for one datagram from the kernel and splits it into
// messages. A datagram from another port id is read past: only the kernel (port id 0) answers.
func (c *Conntrack) read() ([]nlmsg, error) {
	for {
		var (
			n    int
			from unix.Sockaddr
			rerr error
		)
		err := c.conn.Read(func(fd uintptr) bool {
			n, from, rerr = unix.Recvfrom(int(fd), c.buf, 0)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			return nil, err
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue
		}
		return splitMessages(c.buf[:n])
	}
}

// Close closes the socket. A lookup waiting in another goroutine returns at once, and so does
// every later one, with an error matching [os.ErrClosed].
func (c *Conntrack) Close() error {
	if c.closed.Swap(true) {
		return errConntrackClosed
	}
	return c.file.Close()
}
