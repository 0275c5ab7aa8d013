package nfq

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Queue is one bound NFQUEUE queue. One goroutine at a time may call [Queue.Recv]; the verdict
// methods ([Queue.Accept], [Queue.Drop], [Queue.Repeat]), [Queue.Stats] and [Queue.Close] are
// safe from any goroutine, concurrently with Recv and with each other.
type Queue struct {
	num  uint16
	file *os.File // the netlink socket, non-blocking, in Go's poller so Close wakes Recv
	conn syscall.RawConn
	seq  atomic.Uint32

	// The reader's own: the receive buffer and packets read but not yet returned.
	buf     []byte
	pending []Packet

	closed        atomic.Bool
	overruns      atomic.Uint64
	verdictErrors atomic.Uint64
	malformed     atomic.Uint64
}

// Open binds queue cfg.Num on a new NETLINK_NETFILTER socket in the network namespace of the
// calling thread, where the socket stays whichever thread uses it later. It needs CAP_NET_ADMIN.
// It fails (EPERM) if another socket holds the queue.
func Open(cfg Config) (*Queue, error) {
	cfg = cfg.withDefaults()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK,
		unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nfq: opening a netfilter netlink socket: %w", err)
	}
	if err := setupSocket(fd, cfg.RecvBuffer); err != nil {
		unix.Close(fd)
		return nil, err
	}
	q := &Queue{num: cfg.Num, file: os.NewFile(uintptr(fd), "nfqueue"), buf: make([]byte, recvBufLen)}
	if q.conn, err = q.file.SyscallConn(); err == nil {
		err = q.bind(cfg.MaxLen)
	}
	if err != nil {
		q.file.Close()
		return nil, err
	}
	return q, nil
}

// recvBufLen holds the largest message the kernel sends: a whole copy range of payload and
// its attributes.
const recvBufLen = copyRange + 4096

// setupSocket sizes fd's receive buffer and binds it to a port id the kernel picks.
func setupSocket(fd, rcvbuf int) error {
	// SO_RCVBUFFORCE passes net.core.rmem_max and needs CAP_NET_ADMIN, which binding a queue
	// needs anyway; SO_RCVBUF is the fallback, capped.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf); err != nil {
			return fmt.Errorf("nfq: sizing the receive buffer: %w", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("nfq: binding the netlink socket: %w", err)
	}
	return nil
}

// bind unbinds and rebinds the AF_INET queue handler (needed before Linux 3.8, a no-op since),
// then binds and configures the queue in one request.
func (q *Queue) bind(maxLen uint32) error {
	// An unbind of a family nobody bound may fail on old kernels; only the bind matters.
	_ = q.request(func(seq uint32) []byte { return cmdMessage(seq, q.num, cmdPFUnbind) })
	if err := q.request(func(seq uint32) []byte { return cmdMessage(seq, q.num, cmdPFBind) }); err != nil {
		return fmt.Errorf("nfq: binding the AF_INET queue handler: %w", err)
	}
	if err := q.request(func(seq uint32) []byte { return bindMessage(seq, q.num, maxLen) }); err != nil {
		return fmt.Errorf("nfq: binding queue %d: %w", q.num, err)
	}
	return nil
}

// request sends the config message build makes and waits for the kernel's answer to it. A
// packet queued meanwhile is kept for Recv.
func (q *Queue) request(build func(seq uint32) []byte) error {
	seq := q.seq.Add(1)
	if err := q.send(build(seq)); err != nil {
		return err
	}
	for {
		msgs, err := q.read()
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.typ == nlmsgError && m.seq == seq {
				return q.ackError(m)
			}
			q.dispatch(m)
		}
	}
}

// ackError returns the error an NLMSG_ERROR answering a request carries, nil for an ack.
func (q *Queue) ackError(m nlmsg) error {
	code, err := decodeError(m.data)
	if err != nil || code == 0 {
		return err
	}
	return unix.Errno(code)
}

// Recv returns the next queued packet, waiting for one. Every packet it returns must get
// exactly one verdict, or it stays queued, counting against the queue's length, until the
// queue is closed (and then it is dropped). After [Queue.Close] it returns [ErrClosed].
func (q *Queue) Recv() (Packet, error) {
	if q.closed.Load() {
		return Packet{}, ErrClosed // what is pending died with the queue
	}
	for len(q.pending) == 0 {
		msgs, err := q.read()
		if err != nil {
			return Packet{}, err
		}
		for _, m := range msgs {
			q.dispatch(m)
		}
	}
	p := q.pending[0]
	q.pending = q.pending[1:]
	return p, nil
}

// dispatch keeps a packet message for Recv and counts what else arrives unasked: the error a
// failed verdict brings back, or a packet message that does not decode.
func (q *Queue) dispatch(m nlmsg) {
	switch m.typ {
	case msgPacket:
		p, err := decodePacket(m.data)
		if err != nil {
			q.malformed.Add(1)
			return
		}
		q.pending = append(q.pending, p)
	case nlmsgError:
		if code, err := decodeError(m.data); err != nil || code != 0 {
			q.verdictErrors.Add(1)
		}
	}
}

// read receives one datagram from the kernel and splits it into messages. ENOBUFS, the kernel
// saying it dropped packets it could not deliver, is counted and read past.
func (q *Queue) read() ([]nlmsg, error) {
	for {
		n, from, err := q.recvfrom()
		switch {
		case q.closed.Load():
			return nil, ErrClosed
		case err == unix.ENOBUFS:
			q.overruns.Add(1)
			continue
		case err != nil:
			return nil, fmt.Errorf("nfq: receiving: %w", err)
		}
		// Only the kernel (port id 0) speaks for the queue. Another process would need
		// CAP_NET_ADMIN to send here at all; its messages are ignored all the same.
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue
		}
		msgs, err := splitMessages(q.buf[:n])
		if err != nil {
			q.malformed.Add(1)
		}
		return msgs, nil
	}
}

// recvfrom waits in Go's poller for one datagram.
func (q *Queue) recvfrom() (int, unix.Sockaddr, error) {
	var (
		n    int
		from unix.Sockaddr
		rerr error
	)
	err := q.conn.Read(func(fd uintptr) bool {
		n, from, rerr = unix.Recvfrom(int(fd), q.buf, 0)
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return 0, nil, err
	}
	return n, from, rerr
}

// Accept lets packet id continue past the rule that queued it.
func (q *Queue) Accept(id uint32) error { return q.verdict(id, verdictAccept, 0, false) }

// Drop drops packet id.
func (q *Queue) Drop(id uint32) error { return q.verdict(id, verdictDrop, 0, false) }

// Repeat sets packet id's mark to mark and runs the base chain that queued it again, from its
// first rule, so the ruleset acts on the mark. That chain must not queue a packet so marked
// again, or the packet comes back for ever.
func (q *Queue) Repeat(id, mark uint32) error { return q.verdict(id, verdictRepeat, mark, true) }

// RepeatWith is [Queue.Repeat] with pkt, from its IP header on, put in place of the packet's
// content: the kernel copies it over the queued packet, which leaves with exactly these bytes,
// whatever memory the queued one shared (MSG_ZEROCOPY and spliced pages stay the sender's to
// change). pkt must be as long as the packet and carry valid checksums: the kernel takes it as
// complete (CHECKSUM_NONE).
func (q *Queue) RepeatWith(id, mark uint32, pkt []byte) error {
	if pkt == nil {
		pkt = []byte{}
	}
	if err := q.send(verdictPayloadMessage(q.seq.Add(1), q.num, id, verdictRepeat, mark, true, pkt)); err != nil {
		return fmt.Errorf("nfq: verdict for packet %d: %w", id, err)
	}
	return nil
}

// verdict sends one verdict. The kernel answers only if it fails, and that answer reaches
// Recv, which counts it ([Stats].VerdictErrors).
func (q *Queue) verdict(id, v, mark uint32, setMark bool) error {
	if err := q.send(verdictMessage(q.seq.Add(1), q.num, id, v, mark, setMark)); err != nil {
		return fmt.Errorf("nfq: verdict for packet %d: %w", id, err)
	}
	return nil
}

// send writes one message to the kernel.
func (q *Queue) send(msg []byte) error {
	var serr error
	err := q.conn.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	if q.closed.Load() {
		return ErrClosed
	}
	if err != nil {
		return err
	}
	return serr
}

// Stats returns the queue's counters so far.
func (q *Queue) Stats() Stats {
	return Stats{
		Overruns:      q.overruns.Load(),
		VerdictErrors: q.verdictErrors.Load(),
		Malformed:     q.malformed.Load(),
	}
}

// Close closes the socket, which unbinds the queue: the kernel drops every packet still
// awaiting a verdict. A Recv waiting in another goroutine returns [ErrClosed].
func (q *Queue) Close() error {
	if q.closed.Swap(true) {
		return ErrClosed
	}
	return q.file.Close()
}
