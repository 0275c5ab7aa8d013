package netd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/netd/nfq"
	"github.com/aboxhq/abox/internal/policy"
)

// fakeQueue is a netfilter queue for the gate: the test puts packets in, the gate's verdicts are
// recorded by packet id.
type fakeQueue struct {
	in chan nfq.Packet
	mu sync.Mutex
	// verdicts by packet id, in the order given
	verdicts map[uint32]uint32
	order    []uint32
	changed  chan struct{}
	// the bytes a verdict put in place of the packet's, by packet id
	replaced map[uint32][]byte
	// conntrack, as FlowOpen tells it: the flows it has, or the error it fails with
	open   map[flowKey]bool
	ctErr  error
	ctAsks int
}

func (q *fakeQueue) FlowOpen(key flowKey) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ctAsks++
	return q.open[key], q.ctErr
}

func newFakeQueue() *fakeQueue {
	return &fakeQueue{in: make(chan nfq.Packet, 256), verdicts: map[uint32]uint32{}, replaced: map[uint32][]byte{}, open: map[flowKey]bool{}, changed: make(chan struct{}, 1024)}
}

func (q *fakeQueue) Recv() (nfq.Packet, error) {
	p, ok := <-q.in
	if !ok {
		return nfq.Packet{}, nfq.ErrClosed
	}
	return p, nil
}

// dropped is how the fake records a packet the gate dropped.
const dropped = 0xd0d0

func (q *fakeQueue) Drop(id uint32) error { return q.Repeat(id, dropped) }

func (q *fakeQueue) Repeat(id, mark uint32) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, dup := q.verdicts[id]; dup {
		return errors.New("second verdict")
	}
	q.verdicts[id] = mark
	q.order = append(q.order, id)
	select {
	case q.changed <- struct{}{}:
	default: // a waiter has wake-ups pending already
	}
	return nil
}

func (q *fakeQueue) RepeatWith(id, mark uint32, pkt []byte) error {
	q.mu.Lock()
	q.replaced[id] = slices.Clone(pkt)
	q.mu.Unlock()
	return q.Repeat(id, mark)
}

// bytesOf returns what packet id's verdict put in its place, nil if nothing.
func (q *fakeQueue) bytesOf(id uint32) []byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.replaced[id]
}

// wait returns the verdict of packet id, failing the test if none comes within 3 s.
func (q *fakeQueue) wait(t *testing.T, id uint32) uint32 {
	t.Helper()
	deadline := time.After(3 * time.Second)
	for {
		q.mu.Lock()
		v, ok := q.verdicts[id]
		q.mu.Unlock()
		if ok {
			return v
		}
		select {
		case <-q.changed:
		case <-deadline:
			t.Fatalf("no verdict for packet %d", id)
		}
	}
}

// none fails the test if packet id has a verdict after a short wait: it must still be held.
func (q *fakeQueue) none(t *testing.T, id uint32) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	q.mu.Lock()
	defer q.mu.Unlock()
	if v, ok := q.verdicts[id]; ok {
		t.Fatalf("packet %d got verdict %#x, want it held", id, v)
	}
}

var (
	agentEnd  = netip.MustParseAddrPort("172.30.0.2:40000")
	serverEnd = netip.MustParseAddrPort("192.0.2.10:443")
)

// segment builds an IPv4/TCP packet from the agent to the server.
func segment(src netip.AddrPort, seq uint32, flags nfq.Flags, payload []byte) []byte {
	return tcpPacket(src, serverEnd, seq, 0, flags, payload)
}

// tcpPacket builds an IPv4/TCP packet.
func tcpPacket(src, dst netip.AddrPort, seq, ack uint32, flags nfq.Flags, payload []byte) []byte {
	b := make([]byte, 40+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8], b[9] = 64, 6
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	binary.BigEndian.PutUint16(b[20:], src.Port())
	binary.BigEndian.PutUint16(b[22:], dst.Port())
	binary.BigEndian.PutUint32(b[24:], seq)
	binary.BigEndian.PutUint32(b[28:], ack)
	b[32] = 5 << 4
	b[33] = byte(flags)
	copy(b[40:], payload)
	return b
}

// gateFixture runs a gate over a fake queue whose child answers with answer (and records the
// hellos it was asked about).
type gateFixture struct {
	q      *fakeQueue
	g      *tlsGate
	mu     sync.Mutex
	asked  [][]byte
	answer tlsAnswer
	hold   chan struct{} // when not nil, the child answers only once it is closed
	why    []string      // the gate's own refusals, as it reported them
}

func newGateFixture(t *testing.T, answer tlsAnswer) *gateFixture {
	f := &gateFixture{q: newFakeQueue(), answer: answer}
	f.g = newTLSGate(f.q, func(ctx context.Context, q tlsQuestion) tlsAnswer {
		f.mu.Lock()
		f.asked = append(f.asked, q.hello)
		hold := f.hold
		f.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				return tlsAnswer{err: ctx.Err()}
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.answer
	})
	f.g.refused = func(_ flowKey, why string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.why = append(f.why, why)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.g.serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); close(f.q.in); <-done })
	return f
}

func (f *gateFixture) send(id uint32, src netip.AddrPort, seq uint32, flags nfq.Flags, payload []byte) {
	f.q.in <- nfq.Packet{ID: id, Payload: segment(src, seq, flags, payload)}
}

// hello is a ClientHello for name, as crypto/tls writes it.
func hello(t *testing.T, name string) []byte {
	t.Helper()
	return realHello(t, name)
}

// TestGateAllowsAWholeHello: the SYN and ACK pass at once; of the hello's parts only the latest
// is held (an earlier one, and bytes sent again, are dropped once copied: nothing leaves before
// the verdict), the child is asked once with the whole hello, and the held packets get the allow
// verdict, as does a packet of the flow after it.
func TestGateAllowsAWholeHello(t *testing.T) {
	f := newGateFixture(t, tlsAnswer{name: "exact.test"})
	h := hello(t, "exact.test")
	f.send(1, agentEnd, 1000, nfq.SYN, nil)
	if v := f.q.wait(t, 1); v != policy.VerdictPass {
		t.Fatalf("SYN: verdict %#x, want pass", v)
	}
	f.send(2, agentEnd, 1001, nfq.ACK, nil)
	if v := f.q.wait(t, 2); v != policy.VerdictPass {
		t.Fatalf("ACK: verdict %#x, want pass", v)
	}
	f.send(3, agentEnd, 1001, nfq.ACK, h[:50])
	f.q.none(t, 3)
	f.send(4, agentEnd, 1051, nfq.ACK, h[50:100])
	if v := f.q.wait(t, 3); v != dropped {
		t.Errorf("the first part, once the second came: verdict %#x, want it dropped (the gate has its bytes)", v)
	}
	f.q.none(t, 4)
	f.send(5, agentEnd, 1001, nfq.ACK, h[:100]) // the same bytes again: the agent's TCP resending
	if v := f.q.wait(t, 5); v != dropped {
		t.Errorf("bytes sent again: verdict %#x, want dropped", v)
	}
	f.send(6, agentEnd, 1101, nfq.ACK|nfq.PSH, h[100:])
	for _, id := range []uint32{4, 6} {
		if v := f.q.wait(t, id); v != policy.VerdictAllow {
			t.Errorf("packet %d: verdict %#x, want allow", id, v)
		}
	}
	if len(f.asked) != 1 || !bytes.Equal(f.asked[0], h) {
		t.Errorf("the child was asked %d times (%d bytes first), want once with the %d bytes of the hello", len(f.asked), len(f.asked[0]), len(h))
	}
	f.send(7, agentEnd, 1001+uint32(len(h)), nfq.ACK, []byte("early data"))
	if v := f.q.wait(t, 7); v != policy.VerdictPass {
		t.Errorf("a packet after the verdict: %#x, want pass (the flow is pinned)", v)
	}
}

// TestGateRefuses: what the gate refuses without the child (data in the SYN, a gap, bytes that
// differ from those they overlap, data of a flow it never saw begin, a packet that does not
// parse) and what the child refuses; every held packet of a refused flow gets the refusal.
func TestGateRefuses(t *testing.T) {
	h := hello(t, "other.test")
	for _, tc := range []struct {
		name   string
		answer tlsAnswer
		send   func(f *gateFixture, src netip.AddrPort)
		refuse []uint32
		asked  int
		why    string // the gate's own reason, logged; "" when the child refused
	}{
		{"the child refuses", tlsAnswer{err: errors.New("not allowed")}, func(f *gateFixture, src netip.AddrPort) {
			f.send(1, src, 1, nfq.SYN, nil)
			f.send(2, src, 2, nfq.ACK, h[:50])
			f.send(3, src, 52, nfq.ACK, h[50:])
		}, []uint32{2, 3}, 1, ""},
		{"data in the SYN", tlsAnswer{name: "x"}, func(f *gateFixture, src netip.AddrPort) {
			f.send(1, src, 1, nfq.SYN, h)
		}, []uint32{1}, 0, reasonSYNData},
		{"a gap", tlsAnswer{name: "x"}, func(f *gateFixture, src netip.AddrPort) {
			f.send(1, src, 1, nfq.SYN, nil)
			f.send(2, src, 2, nfq.ACK, h[:50])
			f.send(3, src, 60, nfq.ACK, h[58:])
		}, []uint32{2, 3}, 0, reasonGap},
		{"other bytes over the same sequence", tlsAnswer{name: "x"}, func(f *gateFixture, src netip.AddrPort) {
			f.send(1, src, 1, nfq.SYN, nil)
			f.send(2, src, 2, nfq.ACK, h[:50])
			forged := slices.Clone(h[:60])
			forged[10] ^= 0xff
			f.send(3, src, 2, nfq.ACK, forged)
		}, []uint32{2, 3}, 0, reasonRewritten},
		{"a flow never seen begin", tlsAnswer{name: "x"}, func(f *gateFixture, src netip.AddrPort) {
			f.send(2, src, 2, nfq.ACK, h)
		}, []uint32{2}, 0, reasonUnknownFlow},
		{"closed before the hello was whole", tlsAnswer{name: "x"}, func(f *gateFixture, src netip.AddrPort) {
			f.send(1, src, 1, nfq.SYN, nil)
			f.send(2, src, 2, nfq.ACK, h[:50])
			f.send(3, src, 52, nfq.ACK|nfq.FIN, nil)
		}, []uint32{2, 3}, 0, reasonClosedEarly},
		{"not a segment", tlsAnswer{name: "x"}, func(f *gateFixture, src netip.AddrPort) {
			f.q.in <- nfq.Packet{ID: 9, Payload: []byte{0x45, 0, 0}}
		}, []uint32{9}, 0, "a packet netd cannot read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGateFixture(t, tc.answer)
			tc.send(f, agentEnd)
			for _, id := range tc.refuse {
				if v := f.q.wait(t, id); v != policy.VerdictDeny {
					t.Errorf("packet %d: verdict %#x, want deny", id, v)
				}
			}
			for deadline := time.Now().Add(time.Second); tc.why != "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				f.mu.Lock()
				n := len(f.why)
				f.mu.Unlock()
				if n > 0 {
					break
				}
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.asked) != tc.asked {
				t.Errorf("the child was asked %d times, want %d", len(f.asked), tc.asked)
			}
			if got := strings.Join(f.why, "; "); (tc.why == "") != (got == "") || !strings.Contains(got, tc.why) {
				t.Errorf("the gate's own refusals = %q, want %q", got, tc.why)
			}
		})
	}
}

// TestGateHelloThenClose: a client that sends its whole hello and closes at once has its FIN
// held with the hello until the verdict, and both get it.
func TestGateHelloThenClose(t *testing.T) {
	f := newGateFixture(t, tlsAnswer{name: "exact.test"})
	f.hold = make(chan struct{})
	h := hello(t, "exact.test")
	f.send(1, agentEnd, 1, nfq.SYN, nil)
	f.send(2, agentEnd, 2, nfq.ACK, h)
	f.send(3, agentEnd, 2+uint32(len(h)), nfq.ACK|nfq.FIN, nil)
	f.q.none(t, 3)
	close(f.hold)
	for _, id := range []uint32{2, 3} {
		if v := f.q.wait(t, id); v != policy.VerdictAllow {
			t.Errorf("packet %d: verdict %#x, want allow", id, v)
		}
	}
}

// TestGateBounds: a hello larger than maxHelloBytes, or spread over more than maxHeldPackets
// packets, is refused; past maxHeldFlows flows waiting, a new one is refused at its SYN; and a
// flow whose hello is not whole within helloTimeout is refused.
func TestGateBounds(t *testing.T) {
	t.Run("hello too large", func(t *testing.T) {
		f := newGateFixture(t, tlsAnswer{name: "x"})
		// The record header promises more than the bound, so the gate asks at the first
		// packet; a child that answered before the last packet came would leave it nothing
		// to refuse.
		f.hold = make(chan struct{})
		f.send(1, agentEnd, 1, nfq.SYN, nil)
		// A record header promising 16 KiB, then more than maxHelloBytes in all.
		big := append([]byte{22, 3, 1, 0x40, 0}, make([]byte, 1000)...)
		seq := uint32(2)
		id := uint32(2)
		for sent := 0; sent <= maxHelloBytes; sent += len(big) {
			f.send(id, agentEnd, seq, nfq.ACK, big)
			seq += uint32(len(big))
			id++
			big = make([]byte, 1000)
		}
		if v := f.q.wait(t, id-1); v != policy.VerdictDeny {
			t.Errorf("the packet past %d bytes: verdict %#x, want deny", maxHelloBytes, v)
		}
	})
	t.Run("too many packets", func(t *testing.T) {
		f := newGateFixture(t, tlsAnswer{name: "x"})
		f.send(1, agentEnd, 1, nfq.SYN, nil)
		f.send(2, agentEnd, 2, nfq.ACK, []byte{22, 3, 1, 0x10, 0})
		for i := range maxHelloPackets {
			f.send(uint32(3+i), agentEnd, uint32(7+i), nfq.ACK, []byte{0})
		}
		last := uint32(2 + maxHelloPackets)
		if v := f.q.wait(t, last); v != policy.VerdictDeny {
			t.Errorf("packet %d of the hello: verdict %#x, want deny", maxHelloPackets+1, v)
		}
		if v := f.q.wait(t, last-1); v != policy.VerdictDeny {
			t.Errorf("the packet held before it: verdict %#x, want deny", v)
		}
	})
	t.Run("too many flows", func(t *testing.T) {
		f := newGateFixture(t, tlsAnswer{name: "x"})
		for i := range maxHeldFlows + 1 {
			src := netip.AddrPortFrom(agentEnd.Addr(), uint16(20000+i))
			f.send(uint32(i+1), src, 1, nfq.SYN, nil)
		}
		if v := f.q.wait(t, maxHeldFlows+1); v != policy.VerdictDeny {
			t.Errorf("flow %d's SYN: verdict %#x, want deny", maxHeldFlows+1, v)
		}
		if v := f.q.wait(t, 1); v != policy.VerdictPass {
			t.Errorf("the first flow's SYN: verdict %#x, want pass", v)
		}
	})
	t.Run("hello too slow", func(t *testing.T) {
		f := newGateFixture(t, tlsAnswer{name: "x"})
		now := time.Now()
		var mu sync.Mutex
		f.g.mu.Lock()
		f.g.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		f.g.mu.Unlock()
		f.send(1, agentEnd, 1, nfq.SYN, nil)
		f.send(2, agentEnd, 2, nfq.ACK, []byte{22, 3})
		f.q.none(t, 2)
		mu.Lock()
		now = now.Add(helloTimeout + time.Second)
		mu.Unlock()
		if v := f.q.wait(t, 2); v != policy.VerdictDeny {
			t.Errorf("a hello overdue: verdict %#x, want deny", v)
		}
	})
}

// TestGateChildSilent: a child that does not answer within tlsDecideTimeout leaves the flow
// refused, not held for ever.
func TestGateChildSilent(t *testing.T) {
	f := newGateFixture(t, tlsAnswer{name: "x"})
	f.hold = make(chan struct{}) // never closed: the child never answers
	h := hello(t, "exact.test")
	f.send(1, agentEnd, 1, nfq.SYN, nil)
	f.send(2, agentEnd, 2, nfq.ACK, h)
	deadline := time.Now().Add(tlsDecideTimeout + 2*time.Second)
	for {
		f.q.mu.Lock()
		v, ok := f.q.verdicts[2]
		f.q.mu.Unlock()
		if ok {
			if v != policy.VerdictDeny {
				t.Fatalf("verdict %#x, want deny", v)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the flow is still held after the decision's timeout")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestGateRevoked: the flows the gate allowed whose name is no longer allowed are returned
// once, and their later packets are refused.
func TestGateRevoked(t *testing.T) {
	f := newGateFixture(t, tlsAnswer{name: "exact.test"})
	h := hello(t, "exact.test")
	f.send(1, agentEnd, 1, nfq.SYN, nil)
	f.send(2, agentEnd, 2, nfq.ACK, h)
	f.q.wait(t, 2)
	keep := func(name string) bool { return name != "exact.test" }
	if got := f.g.revoked(keep); len(got) != 1 || got[0] != (flowKey{agentEnd, serverEnd}) {
		t.Fatalf("revoked = %v, want the allowed flow", got)
	}
	if got := f.g.revoked(keep); len(got) != 0 {
		t.Errorf("revoked again = %v, want nothing", got)
	}
	f.send(3, agentEnd, 2+uint32(len(h)), nfq.ACK, []byte("more"))
	if v := f.q.wait(t, 3); v != policy.VerdictDeny {
		t.Errorf("a packet of the revoked flow: verdict %#x, want deny", v)
	}
}

// TestGateNewConnectionOnAnAllowedFiveTuple: the agent's TCP reuses a local port for a new
// connection to the same server as soon as the last one is closed. The new connection's SYN
// starts a held flow of its own: the allowed verdict of the one before does not carry over, and
// its hello, naming a server that is not allowed, is refused.
func TestGateNewConnectionOnAnAllowedFiveTuple(t *testing.T) {
	f := newGateFixture(t, tlsAnswer{name: "exact.test"})
	h := hello(t, "exact.test")
	f.send(1, agentEnd, 1, nfq.SYN, nil)
	f.send(2, agentEnd, 2, nfq.ACK, h)
	if v := f.q.wait(t, 2); v != policy.VerdictAllow {
		t.Fatalf("the first connection: verdict %#x, want allow", v)
	}
	f.mu.Lock()
	f.answer = tlsAnswer{err: errors.New("not allowed")}
	f.mu.Unlock()
	f.send(3, agentEnd, 7000, nfq.SYN, nil)
	if v := f.q.wait(t, 3); v != policy.VerdictPass {
		t.Fatalf("the new connection's SYN: verdict %#x, want pass (held, not allowed)", v)
	}
	f.send(4, agentEnd, 7001, nfq.ACK, hello(t, "other.test"))
	if v := f.q.wait(t, 4); v != policy.VerdictDeny {
		t.Errorf("the new connection's hello: verdict %#x, want deny", v)
	}
	if len(f.asked) != 2 {
		t.Errorf("the child was asked %d times, want once per connection", len(f.asked))
	}
}

// TestGateRefusesUrgentData: a server reads the urgent byte apart from the stream, so the hello
// it reads is not the one the gate assembled. Urgent data in a held flow, or in a pinned one, is
// refused, and the flow with it.
func TestGateRefusesUrgentData(t *testing.T) {
	h := hello(t, "exact.test")
	t.Run("held", func(t *testing.T) {
		f := newGateFixture(t, tlsAnswer{name: "exact.test"})
		f.send(1, agentEnd, 1, nfq.SYN, nil)
		f.send(2, agentEnd, 2, nfq.ACK, h[:50])
		f.send(3, agentEnd, 52, nfq.ACK|nfq.URG, h[50:])
		for _, id := range []uint32{2, 3} {
			if v := f.q.wait(t, id); v != policy.VerdictDeny {
				t.Errorf("packet %d: verdict %#x, want deny", id, v)
			}
		}
		f.wantRefused(t, reasonUrgent)
		if len(f.asked) != 0 {
			t.Errorf("the child was asked %d times, want never", len(f.asked))
		}
	})
	t.Run("pinned", func(t *testing.T) {
		f := newGateFixture(t, tlsAnswer{name: "exact.test"})
		f.send(1, agentEnd, 1, nfq.SYN, nil)
		f.send(2, agentEnd, 2, nfq.ACK, h)
		if v := f.q.wait(t, 2); v != policy.VerdictAllow {
			t.Fatalf("the hello: verdict %#x, want allow", v)
		}
		f.send(3, agentEnd, 2+uint32(len(h)), nfq.ACK|nfq.URG, []byte("!"))
		if v := f.q.wait(t, 3); v != policy.VerdictDeny {
			t.Errorf("urgent data once pinned: verdict %#x, want deny", v)
		}
		f.send(4, agentEnd, 3+uint32(len(h)), nfq.ACK, []byte("more"))
		if v := f.q.wait(t, 4); v != policy.VerdictDeny {
			t.Errorf("the packet after it: verdict %#x, want deny", v)
		}
	})
}

// wantRefused waits up to 3 s (the gate expires flows every second) for it to report a refusal
// of its own containing why.
func (f *gateFixture) wantRefused(t *testing.T, why string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		got := strings.Join(f.why, "; ")
		f.mu.Unlock()
		if strings.Contains(got, why) {
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Errorf("the gate's own refusals = %q, want %q", f.why, why)
}

// TestGatePinsTheHello: an allowed flow's packets that carry bytes of the hello leave with the
// bytes the child judged, whatever bytes the kernel queued (pages rewritten under a zero-copy
// send), checksum and all; those past the hello leave as they are; the server's acknowledgement
// of the whole hello, and only that, ends the pin.
func TestGatePinsTheHello(t *testing.T) {
	f := newGateFixture(t, tlsAnswer{name: "exact.test"})
	h := hello(t, "exact.test")
	end := 2 + uint32(len(h))
	f.send(1, agentEnd, 1, nfq.SYN, nil)
	f.send(2, agentEnd, 2, nfq.ACK, h)
	if v := f.q.wait(t, 2); v != policy.VerdictAllow {
		t.Fatalf("the hello: verdict %#x, want allow", v)
	}
	wantBytes := func(id uint32, want []byte) {
		t.Helper()
		got := f.q.bytesOf(id)
		if want == nil {
			if got != nil {
				t.Errorf("packet %d left with other bytes, want its own", id)
			}
			return
		}
		seg, err := nfq.ParseSegment(got)
		if err != nil {
			t.Fatalf("packet %d left with bytes that do not parse: %v", id, err)
		}
		if !bytes.Equal(seg.Payload, want) {
			t.Errorf("packet %d left with data %q, want %q", id, seg.Payload, want)
		}
		if !bytes.Equal(nfq.TCPChecksum(got), got) {
			t.Errorf("packet %d left with a wrong checksum", id)
		}
	}
	wantBytes(2, h)

	forged := bytes.ReplaceAll(slices.Clone(h), []byte("exact.test"), []byte("other.test"))
	f.send(3, agentEnd, 2, nfq.ACK, forged) // sent again, the pages rewritten meanwhile
	if v := f.q.wait(t, 3); v != policy.VerdictPass {
		t.Errorf("the hello sent again: verdict %#x, want pass", v)
	}
	wantBytes(3, h)

	straddle := append(slices.Clone(forged[len(h)-10:]), "application"...)
	f.send(4, agentEnd, end-10, nfq.ACK, straddle)
	f.q.wait(t, 4)
	wantBytes(4, append(slices.Clone(h[len(h)-10:]), "application"...))

	f.send(5, agentEnd, end, nfq.ACK, []byte("application"))
	if v := f.q.wait(t, 5); v != policy.VerdictPass {
		t.Errorf("data past the hello: verdict %#x, want pass", v)
	}
	wantBytes(5, nil)

	in := func(id, ack uint32, flags nfq.Flags) {
		f.q.in <- nfq.Packet{ID: id, Hook: hookLocalIn, Payload: tcpPacket(serverEnd, agentEnd, 9000, ack, flags, nil)}
	}
	in(6, end-1, nfq.ACK)
	if v := f.q.wait(t, 6); v != policy.VerdictPass {
		t.Errorf("the server acknowledging all but the hello's last byte: verdict %#x, want pass", v)
	}
	f.send(7, agentEnd, 2, nfq.ACK, forged)
	f.q.wait(t, 7)
	wantBytes(7, h)
	in(8, end, nfq.ACK)
	if v := f.q.wait(t, 8); v != policy.VerdictFinal {
		t.Errorf("the server acknowledging the whole hello: verdict %#x, want final", v)
	}
	f.send(9, agentEnd, 2, nfq.ACK, forged) // queued before the flow was allowed
	if v := f.q.wait(t, 9); v != policy.VerdictAllow {
		t.Errorf("the hello sent again once acknowledged: verdict %#x, want allow (the server discards bytes it acknowledged)", v)
	}
	f.g.mu.Lock()
	if n := len(f.g.pinned); n != 0 {
		t.Errorf("%d flows pinned after the acknowledgement, want none", n)
	}
	f.g.mu.Unlock()

	other := netip.MustParseAddrPort("172.30.0.2:40001")
	f.q.in <- nfq.Packet{ID: 10, Hook: hookLocalIn, Payload: tcpPacket(serverEnd, other, 1, 1, nfq.ACK, nil)}
	if v := f.q.wait(t, 10); v != policy.VerdictPass {
		t.Errorf("an incoming packet of a flow not pinned: verdict %#x, want pass", v)
	}
}

// TestGatePinBounds: a server that does not acknowledge the hello within pinTimeout has its
// flow refused; past maxPinnedFlows flows pinned at once, an allowed one is refused, and an
// acknowledged flow no longer counts.
func TestGatePinBounds(t *testing.T) {
	h := hello(t, "exact.test")
	clock := func(f *gateFixture) func(time.Duration) {
		now := time.Now()
		var mu sync.Mutex
		f.g.mu.Lock()
		f.g.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		f.g.mu.Unlock()
		return func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	}
	t.Run("not acknowledged", func(t *testing.T) {
		f := newGateFixture(t, tlsAnswer{name: "exact.test"})
		advance := clock(f)
		f.send(1, agentEnd, 1, nfq.SYN, nil)
		f.send(2, agentEnd, 2, nfq.ACK, h)
		f.q.wait(t, 2)
		advance(pinTimeout + time.Second)
		f.wantRefused(t, reasonPinTimeout)
		f.send(3, agentEnd, 2, nfq.ACK, h)
		if v := f.q.wait(t, 3); v != policy.VerdictDeny {
			t.Errorf("a packet after the timeout: verdict %#x, want deny", v)
		}
	})
	t.Run("too many pinned", func(t *testing.T) {
		f := newGateFixture(t, tlsAnswer{name: "exact.test"})
		for i := range maxPinnedFlows + 1 {
			src := netip.AddrPortFrom(agentEnd.Addr(), uint16(20000+i))
			id := uint32(2*i + 1)
			f.send(id, src, 1, nfq.SYN, nil)
			f.send(id+1, src, 2, nfq.ACK, h)
			want := uint32(policy.VerdictAllow)
			if i == maxPinnedFlows {
				want = policy.VerdictDeny
			}
			if v := f.q.wait(t, id+1); v != want {
				t.Fatalf("flow %d's hello: verdict %#x, want %#x", i+1, v, want)
			}
		}
		f.wantRefused(t, reasonTooManyPinned)
		// The first flow's server acknowledges its hello: a new flow has room.
		first := netip.AddrPortFrom(agentEnd.Addr(), 20000)
		f.q.in <- nfq.Packet{ID: 5000, Hook: hookLocalIn, Payload: tcpPacket(serverEnd, first, 1, 2+uint32(len(h)), nfq.ACK, nil)}
		if v := f.q.wait(t, 5000); v != policy.VerdictFinal {
			t.Fatalf("the acknowledgement: verdict %#x, want final", v)
		}
		src := netip.AddrPortFrom(agentEnd.Addr(), 30000)
		f.send(5001, src, 1, nfq.SYN, nil)
		f.send(5002, src, 2, nfq.ACK, h)
		if v := f.q.wait(t, 5002); v != policy.VerdictAllow {
			t.Errorf("a new flow once one was acknowledged: verdict %#x, want allow", v)
		}
	})
}

// TestGateRefusalsDoNotEvictAllowedFlows: the gate remembers the flows it allowed for `abox
// egress rm`; a flood of flows it refuses (data in the SYN costs the agent nothing) must not
// push an allowed one out of its memory.
func TestGateRefusalsDoNotEvictAllowedFlows(t *testing.T) {
	f := newGateFixture(t, tlsAnswer{name: "exact.test"})
	h := hello(t, "exact.test")
	f.send(1, agentEnd, 1, nfq.SYN, nil)
	f.send(2, agentEnd, 2, nfq.ACK, h)
	f.q.wait(t, 2)
	flood := netip.MustParseAddr("172.30.0.3")
	n := maxAllowedFlows + 1
	for i := range n {
		src := netip.AddrPortFrom(flood, uint16(1024+i))
		f.send(uint32(10+i), src, 1, nfq.SYN, []byte{22})
	}
	f.q.wait(t, uint32(10+n-1))
	got := f.g.revoked(func(name string) bool { return name != "exact.test" })
	if len(got) != 1 || got[0] != (flowKey{agentEnd, serverEnd}) {
		t.Errorf("revoked after %d refusals = %v, want the allowed flow", n, got)
	}
}

// allowDirectly has the gate remember n allowed flows from 172.30.1.0/24, as ask does, without
// their packets; keep says which conntrack still has.
func (f *gateFixture) allowDirectly(n int, keep func(i int) bool) {
	f.g.mu.Lock()
	defer f.g.mu.Unlock()
	for i := range n {
		key := flowKey{netip.AddrPortFrom(netip.AddrFrom4([4]byte{172, 30, 1, byte(i / 60000)}), uint16(1024+i%60000)), serverEnd}
		f.q.mu.Lock()
		f.q.open[key] = keep(i)
		f.q.mu.Unlock()
		if f.g.roomForAllowed() {
			f.g.remember(key, flowVerdict{mark: policy.VerdictAllow, name: "flood.test"})
		}
	}
}

// TestGateRemembersOpenAllowedFlows: past maxAllowedFlows the gate forgets only allowed flows
// conntrack no longer has: one still open, however old, is cut by `abox egress rm` all the same;
// the closed ones are forgotten, so memory stays near the bound.
func TestGateRemembersOpenAllowedFlows(t *testing.T) {
	f := newGateFixture(t, tlsAnswer{name: "exact.test"})
	f.q.open[flowKey{agentEnd, serverEnd}] = true
	h := hello(t, "exact.test")
	f.send(1, agentEnd, 1, nfq.SYN, nil)
	f.send(2, agentEnd, 2, nfq.ACK, h)
	if v := f.q.wait(t, 2); v != policy.VerdictAllow {
		t.Fatalf("the flow kept open: verdict %#x, want allow", v)
	}
	f.allowDirectly(2*maxAllowedFlows, func(int) bool { return false })
	got := f.g.revoked(func(name string) bool { return name != "exact.test" })
	if len(got) != 1 || got[0] != (flowKey{agentEnd, serverEnd}) {
		t.Errorf("revoked after %d allowed flows = %v, want the one still open", 2*maxAllowedFlows, got)
	}
	f.g.mu.Lock()
	defer f.g.mu.Unlock()
	if n := len(f.g.decided); n > maxAllowedFlows+1 {
		t.Errorf("the gate remembers %d flows, want at most %d: the closed ones forgotten", n, maxAllowedFlows+1)
	}
}

// TestGateRefusesPastOpenAllowedFlows: with maxOpenAllowedFlows allowed flows conntrack still
// has, or cannot say about, a new flow is refused rather than one forgotten; a conntrack that
// fails is reported once.
func TestGateRefusesPastOpenAllowedFlows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ctErr error
	}{{"all open", nil}, {"conntrack failing", errors.New("netlink: no answer")}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGateFixture(t, tlsAnswer{name: "exact.test"})
			var reports []string
			f.g.report = func(msg string) { reports = append(reports, msg) }
			f.q.ctErr = tc.ctErr
			f.allowDirectly(maxOpenAllowedFlows, func(int) bool { return true })
			h := hello(t, "exact.test")
			f.send(1, agentEnd, 1, nfq.SYN, nil)
			f.send(2, agentEnd, 2, nfq.ACK, h)
			if v := f.q.wait(t, 2); v != policy.VerdictDeny {
				t.Errorf("flow %d: verdict %#x, want deny", maxOpenAllowedFlows+1, v)
			}
			f.wantRefused(t, reasonTooManyOpen)
			f.g.mu.Lock()
			defer f.g.mu.Unlock()
			if tc.ctErr != nil && (len(reports) != 1 || !strings.Contains(reports[0], tc.ctErr.Error())) {
				t.Errorf("reports = %q, want the conntrack error once", reports)
			}
			if tc.ctErr == nil && len(reports) != 0 {
				t.Errorf("reports = %q, want none", reports)
			}
		})
	}
}
