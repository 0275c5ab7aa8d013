//go:build e2e && linux

package nfq

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests against the kernel; their namespace, ruleset and decider are in e2e_helpers_test.go.

// TestNoListenerDrops: with the ruleset queueing and nobody bound to the queue, the first
// packet of a flow is dropped, not let through.
func TestNoListenerDrops(t *testing.T) {
	enterNetns(t)
	accepted := listen(t)
	if c, err := dial(time.Second); err == nil {
		c.Close()
		t.Fatal("a connection was made with no listener on the queue; want its SYN dropped")
	}
	if c := counters(t); c[2] == 0 {
		t.Errorf("the queue rule counted no packet: the SYN was not dropped by the queue")
	}
	select {
	case b := <-accepted:
		t.Errorf("the server accepted a connection (%q)", b)
	default:
	}
}

// TestCloseUnblocksRecv: Close wakes a Recv waiting in another goroutine, which returns
// ErrClosed.
func TestCloseUnblocksRecv(t *testing.T) {
	enterNetns(t)
	q, err := Open(Config{Num: testQueue})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := q.Recv()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let Recv wait
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Recv after Close = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Recv still waits 2s after Close")
	}
	if err := q.Accept(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Accept after Close = %v, want ErrClosed", err)
	}
}

// TestSecondBindRefused: a queue is held by one socket; a second Open of it fails (EPERM: the
// kernel refuses any config of a queue from a socket other than its own), so
// nobody can take over the decisions of a queue netd holds.
func TestSecondBindRefused(t *testing.T) {
	enterNetns(t)
	q, err := Open(Config{Num: testQueue})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q2, err := Open(Config{Num: testQueue}); !errors.Is(err, unix.EPERM) {
		if err == nil {
			q2.Close()
		}
		t.Errorf("a second Open of queue %d = %v, want EPERM", testQueue, err)
	}
}

// TestFullQueueDrops: a queue holding its MaxLen packets drops the next one rather than
// letting it through (the queue is bound without fail-open), and closing the queue drops
// what it held.
func TestFullQueueDrops(t *testing.T) {
	enterNetns(t)
	listen(t)
	q, err := Open(Config{Num: testQueue, MaxLen: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	first := connectAsync(t) // its SYN is held: nobody gives it a verdict
	if p, err := q.Recv(); err != nil || p.Hook != 3 {
		t.Fatalf("Recv = hook %d, %v; want the first SYN from the output hook", p.Hook, err)
	}
	if c, err := dial(time.Second); err == nil {
		c.Close()
		t.Fatal("a second connection was made past a full queue")
	}
	q.Close()
	if err := connected(first, 2*time.Second); err == nil {
		t.Fatal("the connection whose SYN the closed queue held was made")
	}
}

// TestOverrunCounted: when the socket's receive buffer cannot take what the queue sends, the
// kernel drops those packets and Recv counts the ENOBUFS it reports.
func TestOverrunCounted(t *testing.T) {
	enterNetns(t)
	listen(t)
	q, err := Open(Config{Num: testQueue, RecvBuffer: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for range 64 {
		connectAsync(t)
	}
	p, err := q.Recv()
	if err != nil {
		t.Fatal(err)
	}
	q.Drop(p.ID)
	if s := q.Stats(); s.Overruns == 0 {
		t.Errorf("Stats = %+v after 64 SYNs into a 4 KiB buffer, want an overrun counted", s)
	}
}

// TestAllowedFlowLeavesQueue: an allowed flow's SYN, handshake ACK and first data segment are
// queued; after the data segment is repeated with the allow mark, nothing more of the flow is.
func TestAllowedFlowLeavesQueue(t *testing.T) {
	enterNetns(t)
	got := listen(t)
	d := serve(t, Config{Num: testQueue}, false)
	c, err := dial(time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	bulk := bytes.Repeat([]byte("x"), 4<<20)
	if _, err := c.Write([]byte("ALLOW\n")); err != nil {
		t.Fatal(err)
	}
	<-d.data // decided: the rest goes out with the flow already marked
	if _, err := c.Write(bulk); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if b := <-got; len(b) != 6+len(bulk) {
		t.Errorf("the server got %d bytes, want %d", len(b), 6+len(bulk))
	}
	segs := d.flow(localPort(c))
	if want := []string{"SYN", "flags 0x10", `"ALLOW\n"`}; fmt.Sprint(describe(segs)) != fmt.Sprint(want) {
		t.Errorf("the queue saw %q of the flow, want %q", describe(segs), want)
	}
	if c := counters(t); c[0] != 1 || c[1] != 0 || c[2] != 3 {
		t.Errorf("counters allow, deny, queue = %v, want [1 0 3]", c)
	}
}

// TestDeniedFlowReset: a flow whose first data segment is repeated with the deny mark is
// reset, and the server never sees its data.
func TestDeniedFlowReset(t *testing.T) {
	enterNetns(t)
	got := listen(t)
	serve(t, Config{Num: testQueue}, false)
	c, err := dial(time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("DENY\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Errorf("the client's read = %v, want ECONNRESET or EPIPE", err)
	}
	if b := <-got; len(b) != 0 {
		t.Errorf("the server got %q of a denied flow", b)
	}
	if c := counters(t); c[0] != 0 || c[1] != 1 {
		t.Errorf("counters allow, deny = %d, %d; want 0, 1", c[0], c[1])
	}
}

// TestSplitLineInOrder: a line written in two segments is queued as two segments, in order
// and contiguous, and decided on the whole line.
func TestSplitLineInOrder(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(fmt.Sprintf("hold=%v", hold), func(t *testing.T) {
			enterNetns(t) // a subtest runs on a goroutine of its own: enter here
			got := listen(t)
			d := serve(t, Config{Num: testQueue}, hold)
			c, err := dial(time.Second)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			c.SetNoDelay(true) // Go's default, stated: each write is a segment
			if _, err := c.Write([]byte("AL")); err != nil {
				t.Fatal(err)
			}
			<-d.data // the first segment reached the queue before the second is written
			if _, err := c.Write([]byte("LOW\nmore")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-d.data:
			case <-time.After(3 * time.Second):
				t.Fatalf("the second segment never reached the queue; it saw %q", describe(d.flow(localPort(c))))
			}
			c.Close()
			if b := <-got; string(b) != "ALLOW\nmore" {
				t.Errorf("the server got %q, want %q", b, "ALLOW\nmore")
			}
			segs := d.flow(localPort(c))
			if len(segs) != 4 || string(segs[2].Payload) != "AL" || string(segs[3].Payload) != "LOW\nmore" ||
				segs[3].Seq != segs[2].Seq+2 {
				t.Errorf("the queue saw %q, want SYN, ACK, \"AL\", then \"LOW\\nmore\" two bytes on", describe(segs))
			}
		})
	}
}

// TestGSOWhole: with loopback's MTU at 1500, a first write of 6 KiB leaves as one GSO packet,
// and the queue (bound with NFQA_CFG_F_GSO) hands it over whole and says so.
func TestGSOWhole(t *testing.T) {
	enterNetns(t)
	run(t, "", "ip", "link", "set", "lo", "mtu", "1500")
	got := listen(t)
	d := serve(t, Config{Num: testQueue}, false)
	c, err := dial(time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	first := append([]byte("ALLOW\n"), bytes.Repeat([]byte("y"), 6000)...)
	if _, err := c.Write(first); err != nil {
		t.Fatal(err)
	}
	<-d.data
	c.Close()
	if b := <-got; len(b) != len(first) {
		t.Errorf("the server got %d bytes, want %d", len(b), len(first))
	}
	segs := d.flow(localPort(c))
	if len(segs) != 3 || len(segs[2].Payload) != len(first) || !segs[2].gso {
		t.Errorf("the queue saw %q (GSO: %v), want SYN, ACK and one GSO packet of %d bytes",
			describe(segs), gsoFlags(segs), len(first))
	}
}

// TestRepeatRunsChainAgain: a packet repeated with a mark the ruleset does not act on runs
// the chain again from its start, is queued again, and comes back carrying that mark.
func TestRepeatRunsChainAgain(t *testing.T) {
	enterNetns(t)
	listen(t)
	q, err := Open(Config{Num: testQueue})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	fd := connectAsync(t)
	p, err := q.Recv()
	if err != nil || p.Mark != 0 {
		t.Fatalf("Recv = mark %#x, %v; want the SYN, unmarked", p.Mark, err)
	}
	if err := q.Repeat(p.ID, 0x01020304); err != nil {
		t.Fatal(err)
	}
	again, err := q.Recv()
	if err != nil || again.Mark != 0x01020304 || again.ID == p.ID || !bytes.Equal(again.Payload, p.Payload) {
		t.Fatalf("after Repeat, Recv = id %d mark %#x, %v; want the same SYN again, new id, mark 0x1020304",
			again.ID, again.Mark, err)
	}
	if err := q.Accept(again.ID); err != nil {
		t.Fatal(err)
	}
	if err := connected(fd, time.Second); err != nil {
		t.Errorf("the accepted SYN's connection: %v", err)
	}
}

// TestVerdictErrorCounted: a second verdict for one packet is refused by the kernel (the id is
// gone), and the refusal, which arrives on the socket, is counted by a later Recv.
func TestVerdictErrorCounted(t *testing.T) {
	enterNetns(t)
	listen(t)
	q, err := Open(Config{Num: testQueue})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	connectAsync(t)
	p, err := q.Recv()
	if err != nil {
		t.Fatal(err)
	}
	q.Accept(p.ID)
	if err := q.Accept(p.ID); err != nil {
		t.Fatalf("the second Accept failed to send: %v", err)
	}
	// The refusal is on the socket before the SYN of a connection opened after it; the first
	// flow's handshake ACK may come before either.
	sa, err := unix.Getsockname(connectAsync(t))
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(sa.(*unix.SockaddrInet4).Port)
	for {
		next, err := q.Recv()
		if err != nil {
			t.Fatal(err)
		}
		q.Accept(next.ID)
		if seg, err := ParseSegment(next.Payload); err == nil && seg.SrcPort == port {
			break
		}
	}
	if s := q.Stats(); s.VerdictErrors != 1 {
		t.Errorf("Stats = %+v after a verdict for a packet already decided, want 1 verdict error", s)
	}
}

// TestRepeatWithReplacesTheBytes: a packet repeated with a packet of our own (RepeatWith, its
// TCP checksum computed by TCPChecksum) leaves with our bytes, not the ones queued: the server
// gets what the verdict carried, for a one-segment packet and for a GSO packet of 6 KiB alike.
func TestRepeatWithReplacesTheBytes(t *testing.T) {
	for _, size := range []int{32, 6000} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			enterNetns(t)
			if size > 1500 {
				run(t, "", "ip", "link", "set", "lo", "mtu", "1500")
			}
			got := listen(t)
			q, err := Open(Config{Num: testQueue})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			sent := append([]byte("ALLOW\n"), bytes.Repeat([]byte("a"), size)...)
			want := append([]byte("ALLOW\n"), bytes.Repeat([]byte("b"), size)...)
			go func() {
				for {
					p, err := q.Recv()
					if err != nil {
						return
					}
					seg, err := ParseSegment(p.Payload)
					if err != nil || len(seg.Payload) == 0 {
						q.Accept(p.ID)
						continue
					}
					pkt := bytes.Clone(p.Payload)
					copy(pkt[len(pkt)-len(seg.Payload):], bytes.ReplaceAll(seg.Payload, []byte("a"), []byte("b")))
					q.RepeatWith(p.ID, markAllow, TCPChecksum(pkt))
				}
			}()
			c, err := dial(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(sent); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
			c.Close()
			if b := <-got; !bytes.Equal(b, want) {
				t.Errorf("the server got %d bytes (%q…), want the %d the verdict carried", len(b), b[:min(len(b), 12)], len(want))
			}
		})
	}
}
