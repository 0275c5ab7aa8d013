package netd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/netd/nfq"
	"github.com/aboxhq/abox/internal/policy"
)

// The TLS fast path
//
// Relaying a TLS connection costs netd a second TCP connection, and on two cores that halved the
// agent's download rate. So a connection of the agent to an address netd's resolver answered
// for a name allowed on 443 ([policy.SetTLS]) is not redirected to the SNI proxy: the ruleset
// marks the flow held, and every packet of it goes to [policy.TLSQueue] until the supervisor has
// judged it. The supervisor ([tlsGate]) assembles the ClientHello from the packets that carry
// data, lets none of them out before the decision, hands the whole hello to the serving child,
// which decides on the server name exactly as the SNI proxy does and logs the decision, and then
// gives the flow its verdict; refused, the flow is reset. Packets without data (the SYN, ACKs)
// pass at once with the flow still held; a SYN with data (TCP Fast Open) and urgent data (which
// a server reads apart from the stream) are refused.
//
// Allowed, the flow is pinned before the kernel carries it. The bytes of a packet the kernel
// queued can still change: with MSG_ZEROCOPY, or pages spliced from a file, a TCP segment is
// read from the agent's own memory when it leaves, not when it was sent. So every packet of the
// flow that carries bytes of the hello leaves with the bytes the child judged, copied over it
// ([nfq.Queue.RepeatWith]), the held ones and any the agent's TCP sends again, until the server
// has acknowledged the hello (the gate sees the flow's incoming packets while it is pinned);
// only then is the flow allowed, and the kernel carries the rest at full speed. The server's TCP
// keeps the first copy of each byte it receives and discards any later one of bytes it has
// acknowledged, so what the agent's pages hold by then no longer matters.
//
// Only the flow's latest data packet is held while the hello is incomplete; the ones before it,
// once their bytes are copied, are dropped. The agent's TCP counts a held packet as still in its
// host and, past a few, sends nothing more (TCP small queues), so holding them all would stall a
// hello spread over several packets until the deadline. The dropped ones are sent again by the
// agent's TCP once the flow is pinned (the server's SACK of the last one tells it), with the
// judged bytes. Nothing is acknowledged meanwhile, so a client can have no more of its hello out
// than its initial congestion window (ten packets): a hello in more than maxHelloPackets packets
// is refused at once rather than left to stall. TLS stacks write a ClientHello in one go, one
// packet or two on Docker's networks (one, usually, with segmentation offload).
//
// What the agent gains is speed, not reach: the address is one netd resolved for an allowed
// name (the agent never picks one that is not), the server name is checked as before, and
// nothing the agent writes leaves before the check. The supervisor never parses the hello: it
// reassembles bytes and counts them; the child, which runs with no capability, reads them. The
// gate fails closed everywhere: a hello not whole within helloTimeout, larger than
// maxHelloBytes, spread over more than maxHelloPackets packets, or with a gap in its sequence;
// more than maxHeldFlows flows waiting, or maxPinnedFlows pinned, at once; no answer from the
// child within tlsDecideTimeout; a packet that does not parse — each is refused. With nobody
// reading the queue, or the queue full, the kernel drops the packets, and a packet of a held or
// pinned flow that reaches the ruleset without a verdict is dropped there.
//
// A flow the gate allowed stays allowed while conntrack carries it; `abox egress rm` of its
// name puts it in [policy.SetRevokedFlow], where the ruleset resets it. So the gate remembers the
// name of every allowed flow conntrack still has: past maxAllowedFlows it forgets the oldest
// only once conntrack says they are gone, and past maxOpenAllowedFlows still there (or conntrack
// not answering) it refuses new flows rather than forget one it might have to cut. A new connection on the
// five-tuple of one the gate judged (the agent's TCP reuses a port once the server closed the
// last connection) is judged anew from its SYN.

// packetQueue is what the gate needs of a netfilter queue: [nfq.Queue], or a test's fake.
type packetQueue interface {
	Recv() (nfq.Packet, error)
	Repeat(id uint32, mark uint32) error
	RepeatWith(id uint32, mark uint32, pkt []byte) error
	Drop(id uint32) error
	// FlowOpen reports whether conntrack still has an entry for the flow, marked as one the
	// gate allowed (pinned or allowed).
	FlowOpen(key flowKey) (bool, error)
}

// flowKey is a TCP flow, as the agent sent it.
type flowKey struct{ src, dst netip.AddrPort }

func (k flowKey) String() string { return k.src.String() + " " + k.dst.String() }

// heldFlow is a flow whose ClientHello the gate is assembling or has asked about.
type heldFlow struct {
	start   time.Time
	first   uint32       // the sequence number of the stream's first byte
	next    uint32       // the sequence number of the next byte of the stream
	hello   []byte       // the stream's bytes from its first on
	held    []heldPacket // the packets the gate holds: the latest with data, and once asked all
	packets int          // data packets that brought bytes of the hello
	asked   bool         // the child has the hello
}

// heldPacket is a packet the gate holds, as the kernel queued it.
type heldPacket struct {
	id  uint32
	pkt []byte
}

// pinnedFlow is an allowed flow whose hello the server has not acknowledged yet: every packet
// carrying its bytes leaves with those the child judged.
type pinnedFlow struct {
	first uint32 // the sequence number of the hello's first byte
	hello []byte // the bytes judged
	since time.Time
}

// Bounds of the gate.
//
// The kernel's queue holds every packet waiting for a verdict: a packet or two per flow the gate
// holds until it has asked, then what the flow sends until the answer, beside the packets
// without data it judges at once; tlsQueueLen leaves it room. The bytes held stay within the
// agent's own socket buffers.
const (
	maxHeldFlows    = 256
	maxPinnedFlows  = 1024
	maxHelloPackets = 8
	maxAllowedFlows = 16384
	// maxOpenAllowedFlows bounds the allowed flows remembered because conntrack still has
	// them; each is about 150 bytes of the supervisor's memory.
	maxOpenAllowedFlows = 65536
	// evictChecks is how many of the oldest allowed flows one new one asks conntrack about.
	evictChecks      = 16
	maxRefusedFlows  = 4096
	tlsDecideTimeout = 5 * time.Second
	// pinTimeout bounds how long a pinned flow waits for the server's acknowledgement of its
	// hello; a server that takes longer is not answering, and the flow is reset.
	pinTimeout  = time.Minute
	tlsQueueLen = 16 * maxHeldFlows
)

// tlsQuestion is what the gate asks the child about one flow.
type tlsQuestion struct {
	flow  flowKey
	hello []byte
}

// tlsAnswer is the child's decision: the canonical server name allowed, or why not. unlogged
// marks a refusal the child did not log itself (it did not answer, or named a name the
// supervisor does not allow).
type tlsAnswer struct {
	name     string
	err      error
	unlogged bool
}

// tlsGate holds the first packets of the agent's TLS flows to [policy.SetTLS] and gives them
// the child's verdict. handle is called from one goroutine ([tlsGate.serve]); the verdicts of
// the child's answers and of timeouts come from others.
type tlsGate struct {
	q      packetQueue
	decide func(context.Context, tlsQuestion) tlsAnswer
	now    func() time.Time
	// report is told what the gate could not do (a verdict the kernel refused); nil: nothing.
	report func(string)
	// refused is told of each flow the gate refuses itself, with the reason, for the child to log
	// as it logs its own decisions; nil: nothing.
	refused func(flowKey, string)

	mu      sync.Mutex
	flows   map[flowKey]*heldFlow
	pinned  map[flowKey]*pinnedFlow
	decided map[flowKey]flowVerdict // flows judged, for the packets still on their way
	// decided's keys, oldest first, for its bounds: those allowed and those refused apart, so
	// that refusals, which cost the agent nothing, cannot push an allowed flow out of memory.
	allowedOrder, refusedOrder []decidedAt
	serial                     uint64 // of the last decision
	ctFailed                   bool   // a conntrack lookup failed, and was reported
}

// flowVerdict is a judged flow: its verdict mark and, when allowed, the name.
type flowVerdict struct {
	mark   uint32
	name   string
	serial uint64 // which decision of the flow's five-tuple this is
}

// decidedAt is one entry of [tlsGate.order]: the decision serial of key it stands for.
type decidedAt struct {
	key    flowKey
	serial uint64
}

func newTLSGate(q packetQueue, decide func(context.Context, tlsQuestion) tlsAnswer) *tlsGate {
	return &tlsGate{q: q, decide: decide, now: time.Now, flows: map[flowKey]*heldFlow{}, pinned: map[flowKey]*pinnedFlow{},
		decided: map[flowKey]flowVerdict{}}
}

// serve reads the queue until it is closed, and every second refuses the flows whose hello is
// overdue.
func (g *tlsGate) serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go g.expire(ctx)
	for {
		p, err := g.q.Recv()
		if errors.Is(err, nfq.ErrClosed) {
			return nil
		}
		if err != nil {
			continue // an overrun: the kernel dropped packets, which its TCP sends again
		}
		g.handle(ctx, p)
	}
}

// handle takes one queued packet.
func (g *tlsGate) handle(ctx context.Context, p nfq.Packet) {
	seg, err := nfq.ParseSegment(p.Payload)
	if err != nil {
		g.verdict(p.ID, policy.VerdictDeny)
		g.refuse(flowKey{}, "a packet netd cannot read: "+err.Error())
		return
	}
	if p.Hook == hookLocalIn {
		g.handleIn(p, seg)
		return
	}
	key := flowKey{netip.AddrPortFrom(seg.Src, seg.SrcPort), netip.AddrPortFrom(seg.Dst, seg.DstPort)}
	if seg.Flags&nfq.URG != 0 {
		// A server reads the urgent byte apart from the stream, so the hello it reads is not
		// the one the gate assembled. No TLS client sends one.
		g.mu.Lock()
		if f := g.flows[key]; f != nil {
			g.refuseLocked(key, f)
		}
		delete(g.pinned, key)
		g.remember(key, flowVerdict{mark: policy.VerdictDeny})
		g.mu.Unlock()
		g.verdict(p.ID, policy.VerdictDeny)
		g.refuse(key, reasonUrgent)
		return
	}
	g.mu.Lock()
	if seg.Flags&nfq.SYN != 0 && g.flows[key] == nil {
		// A new connection: the agent's TCP may reuse a local port as soon as the last
		// connection to the same server is closed, and nothing of that one's verdict, allowed
		// least of all, may stand for this one.
		delete(g.decided, key)
		delete(g.pinned, key)
	}
	if pf := g.pinned[key]; pf != nil {
		out := pf.pin(p.Payload, seg)
		g.mu.Unlock()
		g.verdictWith(p.ID, policy.VerdictPass, out)
		return
	}
	if d, ok := g.decided[key]; ok { // on its way before the flow's mark changed
		g.mu.Unlock()
		g.verdict(p.ID, d.mark)
		return
	}
	mark, ask, why := g.take(key, p, seg)
	g.mu.Unlock()
	switch mark {
	case 0:
	case verdictDrop:
		g.drop([]uint32{p.ID})
	default:
		g.verdict(p.ID, mark)
	}
	if why != "" {
		g.refuse(key, why)
	}
	if ask != nil {
		go g.ask(ctx, key, ask)
	}
}

// take records a packet of key under the lock. It returns the packet's own verdict when it has
// one now (0 when it is held), the hello to ask about when it is now whole, and why the gate
// refused the flow itself, if it did.
func (g *tlsGate) take(key flowKey, p nfq.Packet, seg nfq.Segment) (mark uint32, ask []byte, why string) {
	f := g.flows[key]
	hold := heldPacket{id: p.ID, pkt: bytes.Clone(p.Payload)} // the queue's buffer is reused
	switch {
	case seg.Flags&nfq.SYN != 0 && f == nil:
		if len(seg.Payload) > 0 { // TCP Fast Open: data before any check
			g.remember(key, flowVerdict{mark: policy.VerdictDeny})
			return policy.VerdictDeny, nil, reasonSYNData
		}
		if len(g.flows) >= maxHeldFlows {
			return policy.VerdictDeny, nil, reasonTooManyHeld
		}
		g.flows[key] = &heldFlow{start: g.now(), first: seg.Seq + 1, next: seg.Seq + 1}
		return policy.VerdictPass, nil, ""
	case f == nil: // a flow the gate never saw begin, or forgot
		return policy.VerdictDeny, nil, reasonUnknownFlow
	case len(seg.Payload) == 0 && seg.Flags&(nfq.FIN|nfq.RST) == 0:
		return policy.VerdictPass, nil, "" // an ACK, a window update: nothing of the agent's
	case len(seg.Payload) == 0 && f.asked:
		f.held = append(f.held, hold) // the end of a whole hello: it waits for the verdict
		return 0, nil, ""
	case len(seg.Payload) == 0:
		// Closed or aborted before the hello was whole: it never will be. Waiting for it would
		// keep the flow counted against maxHeldFlows until helloTimeout.
		g.refuseLocked(key, f)
		return policy.VerdictDeny, nil, reasonClosedEarly
	}
	added, why := f.append(seg)
	if why != "" {
		g.refuseLocked(key, f)
		return policy.VerdictDeny, nil, why
	}
	if added > 0 {
		if f.packets++; f.packets > maxHelloPackets {
			g.refuseLocked(key, f)
			return policy.VerdictDeny, nil, reasonTooManyPackets
		}
	}
	switch {
	case f.asked: // after the hello, before the answer: it waits for the verdict
		f.held = append(f.held, hold)
		return 0, nil, ""
	case helloWhole(f.hello):
		f.held = append(f.held, hold)
		f.asked = true
		return 0, f.hello, ""
	case added == 0: // bytes the gate has: sent again by the agent's TCP
		return verdictDrop, nil, ""
	}
	// A part of the hello: its bytes are copied; only the latest such packet stays held.
	if len(f.held) > 0 {
		g.drop(ids(f.held))
	}
	f.held = []heldPacket{hold}
	return 0, nil, ""
}

func ids(held []heldPacket) []uint32 {
	out := make([]uint32, len(held))
	for i, h := range held {
		out[i] = h.id
	}
	return out
}

// hookLocalIn is the netfilter hook of the packets coming in to the agent (NF_INET_LOCAL_IN):
// those of pinned flows are queued.
const hookLocalIn = 1

// handleIn takes an incoming packet of a pinned flow: the server's acknowledgement of the whole
// hello ends the pin.
func (g *tlsGate) handleIn(p nfq.Packet, seg nfq.Segment) {
	key := flowKey{netip.AddrPortFrom(seg.Dst, seg.DstPort), netip.AddrPortFrom(seg.Src, seg.SrcPort)}
	mark := uint32(policy.VerdictPass)
	g.mu.Lock()
	if pf := g.pinned[key]; pf != nil {
		switch {
		case seg.Flags&nfq.RST != 0:
			delete(g.pinned, key)
		case seg.Flags&nfq.ACK != 0 && int32(seg.Ack-pf.end()) >= 0:
			// The server's TCP has the judged bytes and discards any other copy of them, so
			// whatever the agent's TCP still sends of them is harmless.
			delete(g.pinned, key)
			mark = policy.VerdictFinal
		}
	}
	g.mu.Unlock()
	g.verdict(p.ID, mark)
}

// end is the sequence number right after the hello's bytes.
func (pf *pinnedFlow) end() uint32 { return pf.first + uint32(len(pf.hello)) }

// pin returns pkt, a packet of the pinned flow, with the bytes of the hello it carries replaced
// by those judged and its checksum computed, or nil when it carries none.
func (pf *pinnedFlow) pin(pkt []byte, seg nfq.Segment) []byte {
	at := int64(int32(seg.Seq - pf.first)) // where the segment starts in the hello; wraps as TCP's does
	lo, hi := max(at, 0), min(at+int64(len(seg.Payload)), int64(len(pf.hello)))
	if lo >= hi {
		return nil
	}
	out := bytes.Clone(pkt)
	copy(out[seg.DataOffset+int(lo-at):], pf.hello[lo:hi])
	return nfq.TCPChecksum(out)
}

// verdictDrop is [tlsGate.take]'s verdict for a packet it drops: its bytes are the gate's, and
// the agent's TCP sends them again.
const verdictDrop = 1

// Reasons the gate refuses a flow itself, as logged.
const (
	reasonSYNData        = "data in the syn (tcp fast open)"
	reasonTooManyHeld    = "too many tls flows waiting for their client hello"
	reasonUnknownFlow    = "a packet of a flow netd did not see begin"
	reasonGap            = "client hello out of order"
	reasonRewritten      = "client hello sent again with other bytes"
	reasonTooManyPackets = "client hello in more than 8 packets"
	reasonHelloTimeout   = "no whole client hello within 10s"
	reasonClosedEarly    = "closed before its client hello was whole"
	reasonUrgent         = "urgent data in a tls flow"
	reasonTooManyPinned  = "too many tls flows waiting for the server to acknowledge their client hello"
	reasonPinTimeout     = "the server did not acknowledge the client hello within 1m"
	reasonTooManyOpen    = "too many allowed tls flows open"
)

// append adds a segment's data to the stream: in order, or overlapping what it has with the
// same bytes (a retransmission). It returns how many bytes were new, or why it refused the
// segment: a gap, different bytes, or a stream past maxHelloBytes.
func (f *heldFlow) append(seg nfq.Segment) (added int, why string) {
	off := int32(seg.Seq - f.next) // relative to the next byte expected; wraps as TCP's does
	data := seg.Payload
	switch {
	case off > 0:
		return 0, reasonGap
	case off < 0:
		back := int(-off)
		if back > len(f.hello) {
			return 0, reasonGap
		}
		have := f.hello[len(f.hello)-back:]
		n := min(back, len(data))
		if !bytes.Equal(have[:n], data[:n]) {
			return 0, reasonRewritten
		}
		data = data[n:]
	}
	if len(f.hello)+len(data) > maxHelloBytes {
		return 0, errHelloTooBig.Error()
	}
	f.hello = append(f.hello, data...)
	f.next += uint32(len(data))
	return len(data), ""
}

// helloWhole reports whether the stream's first bytes hold a whole ClientHello, or enough to
// know they never will (the child then refuses them with the reason).
func helloWhole(b []byte) bool {
	_, _, err := readClientHello(bytes.NewReader(b))
	return !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF)
}

// ask has the child decide on a whole hello, then gives the flow's packets the verdict.
func (g *tlsGate) ask(ctx context.Context, key flowKey, hello []byte) {
	ctx, cancel := context.WithTimeout(ctx, tlsDecideTimeout)
	defer cancel()
	a := g.decide(ctx, tlsQuestion{flow: key, hello: hello})
	d := flowVerdict{mark: policy.VerdictDeny}
	if a.err == nil && a.name != "" {
		d = flowVerdict{mark: policy.VerdictAllow, name: a.name}
	}
	g.mu.Lock()
	f := g.flows[key]
	delete(g.flows, key)
	var pf *pinnedFlow
	if f != nil && d.mark == policy.VerdictAllow {
		switch {
		case len(g.pinned) >= maxPinnedFlows:
			d = flowVerdict{mark: policy.VerdictDeny}
			a = tlsAnswer{err: errors.New(reasonTooManyPinned), unlogged: true}
		case !g.roomForAllowed():
			d = flowVerdict{mark: policy.VerdictDeny}
			a = tlsAnswer{err: errors.New(reasonTooManyOpen), unlogged: true}
		default:
			pf = &pinnedFlow{first: f.first, hello: f.hello, since: g.now()}
			g.pinned[key] = pf
		}
	}
	g.remember(key, d)
	g.mu.Unlock()
	if f != nil {
		for _, h := range f.held {
			out := []byte(nil)
			if seg, err := nfq.ParseSegment(h.pkt); pf != nil && err == nil {
				out = pf.pin(h.pkt, seg)
			}
			g.verdictWith(h.id, d.mark, out)
		}
	}
	if a.unlogged {
		g.refuse(key, a.err.Error())
	}
}

// refuseLocked refuses a flow now: its held packets are reset and its later ones refused.
func (g *tlsGate) refuseLocked(key flowKey, f *heldFlow) {
	delete(g.flows, key)
	g.remember(key, flowVerdict{mark: policy.VerdictDeny})
	go g.verdicts(ids(f.held), policy.VerdictDeny)
}

// remember keeps a decision for the flow's late packets and, when allowed, for revocation
// ([tlsGate.roomForAllowed] made room for it), forgetting the oldest refused past
// maxRefusedFlows. A refused flow forgotten is refused still: the kernel resets it by its mark,
// and a late packet of it is one of a flow the gate did not see begin.
func (g *tlsGate) remember(key flowKey, d flowVerdict) {
	g.serial++
	d.serial = g.serial
	g.decided[key] = d
	if d.mark == policy.VerdictAllow {
		g.allowedOrder = append(g.allowedOrder, decidedAt{key, d.serial})
	} else {
		g.refusedOrder = g.bound(append(g.refusedOrder, decidedAt{key, d.serial}), maxRefusedFlows)
	}
}

// roomForAllowed makes room, under the lock, for one more allowed flow in the gate's memory.
// Past maxAllowedFlows it forgets the oldest whose conntrack entry is gone, asking about at most
// evictChecks of them; one conntrack still has, or cannot say about, goes to the back: a flow
// `abox egress rm` may have to cut is never forgotten. It reports false when the memory is at
// maxOpenAllowedFlows all the same: the new flow is then refused.
func (g *tlsGate) roomForAllowed() bool {
	for checked := 0; len(g.allowedOrder) >= maxAllowedFlows && checked < evictChecks; {
		old := g.allowedOrder[0]
		g.allowedOrder = g.allowedOrder[1:]
		d, ok := g.decided[old.key]
		if !ok || d.serial != old.serial {
			continue // decided again since: another entry stands for it
		}
		if d.mark != policy.VerdictAllow { // revoked
			delete(g.decided, old.key)
			continue
		}
		checked++
		open, err := g.q.FlowOpen(old.key)
		if err == nil && !open {
			delete(g.decided, old.key)
			continue
		}
		if err != nil && !g.ctFailed {
			g.ctFailed = true
			if g.report != nil {
				g.report("tls gate: asking conntrack whether an allowed flow is open (it stays remembered): " + err.Error())
			}
		}
		g.allowedOrder = append(g.allowedOrder, old)
	}
	return len(g.allowedOrder) < maxOpenAllowedFlows
}

// bound forgets the oldest decisions of order past n, and returns what is left of it.
func (g *tlsGate) bound(order []decidedAt, n int) []decidedAt {
	for len(order) > n {
		if old := order[0]; g.decided[old.key].serial == old.serial {
			delete(g.decided, old.key)
		}
		order = order[1:]
	}
	return order
}

// expire refuses, every second, the flows whose hello did not come whole within helloTimeout of
// their first packet; an asked flow is the decision's timeout's.
func (g *tlsGate) expire(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		var late, unacked []flowKey
		for key, f := range g.flows {
			if !f.asked && g.now().Sub(f.start) > helloTimeout {
				g.refuseLocked(key, f)
				late = append(late, key)
			}
		}
		for key, pf := range g.pinned {
			if g.now().Sub(pf.since) > pinTimeout {
				// Its next packet is refused, and the flow reset.
				delete(g.pinned, key)
				g.remember(key, flowVerdict{mark: policy.VerdictDeny})
				unacked = append(unacked, key)
			}
		}
		g.mu.Unlock()
		for _, key := range late {
			g.refuse(key, reasonHelloTimeout)
		}
		for _, key := range unacked {
			g.refuse(key, reasonPinTimeout)
		}
	}
}

// revoked returns the flows the gate allowed whose name allowed no longer allows on 443, and
// forgets them: `abox egress rm` resets them ([policy.SetRevokedFlow]).
func (g *tlsGate) revoked(allowed func(name string) bool) []flowKey {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []flowKey
	for key, d := range g.decided {
		if d.mark == policy.VerdictAllow && !allowed(d.name) {
			out = append(out, key)
			g.decided[key] = flowVerdict{mark: policy.VerdictDeny, serial: d.serial}
			delete(g.pinned, key)
		}
	}
	return out
}

// refuse reports a refusal of the gate's own.
func (g *tlsGate) refuse(key flowKey, why string) {
	if g.refused != nil {
		g.refused(key, why)
	}
}

// drop drops packets whose bytes the gate has copied.
func (g *tlsGate) drop(ids []uint32) {
	for _, id := range ids {
		if err := g.q.Drop(id); err != nil && g.report != nil {
			g.report(fmt.Sprintf("tls gate: dropping packet %d: %v", id, err))
		}
	}
}

func (g *tlsGate) verdicts(ids []uint32, mark uint32) {
	for _, id := range ids {
		g.verdict(id, mark)
	}
}

// verdictWith gives packet id its verdict and, when pkt is not nil, pkt as its bytes.
func (g *tlsGate) verdictWith(id, mark uint32, pkt []byte) {
	if pkt == nil {
		g.verdict(id, mark)
		return
	}
	if err := g.q.RepeatWith(id, mark, pkt); err != nil && g.report != nil {
		g.report(fmt.Sprintf("tls gate: verdict for packet %d: %v", id, err))
	}
}

func (g *tlsGate) verdict(id, mark uint32) {
	if err := g.q.Repeat(id, mark); err != nil && g.report != nil {
		g.report(fmt.Sprintf("tls gate: verdict for packet %d: %v", id, err))
	}
}
