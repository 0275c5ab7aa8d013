//go:build e2e && linux

package nfq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"
)

// The conntrack lookups against the kernel, as root, each test in a network namespace of its
// own (enterNetns, as the queue's tests) holding only loopback. The queue's ruleset is replaced
// with ctRuleset, which sets a conntrack mark on the connections to one port and, by using
// conntrack at all, makes the kernel track the namespace's connections.

const (
	ctPort      = 7002    // a connection to it gets ctMark
	ctPlainPort = 7003    // a connection to it keeps mark 0
	ctMark      = 0x20001 // both halves set, so a mark read as one u16 or in the wrong order is wrong
)

var ctRuleset = fmt.Sprintf(`table ip conntrack_test {
	chain out {
		type filter hook output priority filter; policy accept;
		ip daddr 127.0.0.1 tcp dport %d ct mark set %#x
	}
}
`, ctPort, ctMark)

// enterConntrackNetns moves the calling goroutine into a new network namespace, as enterNetns
// does, with ctRuleset in place of the queue's ruleset, and opens a conntrack socket there.
// enterNetns has checked that a program started from here runs in that namespace, so the flush
// never reaches the host's ruleset.
func enterConntrackNetns(t *testing.T) *Conntrack {
	t.Helper()
	enterNetns(t)
	run(t, "", "nft", "flush", "ruleset")
	run(t, ctRuleset, "nft", "-f", "-")
	c, err := OpenConntrack()
	if err != nil {
		t.Fatalf("OpenConntrack: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctConn makes a TCP connection to 127.0.0.1:port from this goroutine (so in the test's
// namespace) and returns its client end, its flow (client → server) and a channel closed when
// the server has read to the client's FIN and closed its end.
func ctConn(t *testing.T, port int) (net.Conn, flow, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	serverDone := make(chan struct{})
	go func() {
		defer close(serverDone)
		s, err := ln.Accept()
		if err != nil {
			return
		}
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.Copy(io.Discard, s)
		s.Close()
	}()
	c, err := net.DialTimeout("tcp4", ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	f := flow{c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()}
	return c, f, serverDone
}

// flow is a TCP flow as Lookup takes it.
type flow struct{ src, dst netip.AddrPort }

func (f flow) reverse() flow                            { return flow{f.dst, f.src} }
func (f flow) String() string                           { return fmt.Sprintf("%v → %v", f.src, f.dst) }
func lookup(c *Conntrack, f flow) (uint32, bool, error) { return c.Lookup(f.src, f.dst) }

// wantLookup checks what Lookup says of f.
func wantLookup(t *testing.T, c *Conntrack, f flow, mark uint32, found bool) {
	t.Helper()
	if m, ok, err := lookup(c, f); m != mark || ok != found || err != nil {
		t.Errorf("Lookup(%v) = %#x, %v, %v; want %#x, %v, nil", f, m, ok, err, mark, found)
	}
}

// TestConntrackLookup: the entry of a connection the ruleset marked is found with that mark,
// an unmarked one with mark 0; a flow nobody opened, and a connection's reply direction, are not
// found.
func TestConntrackLookup(t *testing.T) {
	c := enterConntrackNetns(t)
	_, marked, _ := ctConn(t, ctPort)
	_, plain, _ := ctConn(t, ctPlainPort)
	wantLookup(t, c, marked, ctMark, true)
	wantLookup(t, c, plain, 0, true)
	// The kernel finds an entry by its reply tuple too; the server's side is no flow of its own.
	wantLookup(t, c, marked.reverse(), 0, false)
	unused := flow{netip.MustParseAddrPort("127.0.0.1:1"), marked.dst}
	wantLookup(t, c, unused, 0, false)
	// The same flow with IPv4-mapped addresses, as a net.TCPAddr with a 16-byte IP gives them.
	mapped := flow{
		netip.AddrPortFrom(netip.AddrFrom16(marked.src.Addr().As16()), marked.src.Port()),
		netip.AddrPortFrom(netip.AddrFrom16(marked.dst.Addr().As16()), marked.dst.Port()),
	}
	wantLookup(t, c, mapped, ctMark, true)
	if m, ok, err := LookupFlow(marked.src, marked.dst); m != ctMark || !ok || err != nil {
		t.Errorf("LookupFlow(%v) = %#x, %v, %v; want %#x, true, nil", marked, m, ok, err, ctMark)
	}
}

// TestConntrackEntryOutlivesConnection: a closed connection's entry is still found, with its
// mark, until it is deleted; then it is not.
func TestConntrackEntryOutlivesConnection(t *testing.T) {
	c := enterConntrackNetns(t)
	conn, marked, serverDone := ctConn(t, ctPort)
	conn.Close()
	<-serverDone
	wantLookup(t, c, marked, ctMark, true)
	deleteEntry(t, c, marked)
	wantLookup(t, c, marked, 0, false)
}

// deleteEntry deletes the conntrack entry of f, as `conntrack -D` would: with a get's request
// retyped IPCTNL_MSG_CT_DELETE, asking for an ack.
func deleteEntry(t *testing.T, c *Conntrack, f flow) {
	t.Helper()
	const seq = 0xde1e7e
	msg := ctGetMessage(seq, f.src, f.dst)
	binary.NativeEndian.PutUint16(msg[4:], nfnlSubsysCtnetlink<<8|2)
	binary.NativeEndian.PutUint16(msg[6:], nlmFRequest|nlmFAck)
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.request(seq, msg)
	if err != nil || m.typ != nlmsgError {
		t.Fatalf("deleting the entry of %v: answer %+v, %v; want an ack", f, m, err)
	}
	if code, err := decodeError(m.data); code != 0 || err != nil {
		t.Fatalf("deleting the entry of %v: errno %d, %v", f, code, err)
	}
}

// TestConntrackSkipsStaleAnswers: an answer left on the socket by an earlier request (here the
// entry of a marked connection) is not taken for the answer to the next lookup (no entry).
func TestConntrackSkipsStaleAnswers(t *testing.T) {
	c := enterConntrackNetns(t)
	_, marked, _ := ctConn(t, ctPort)
	if err := c.send(ctGetMessage(0x5eed, marked.src, marked.dst)); err != nil {
		t.Fatal(err)
	}
	unused := flow{netip.MustParseAddrPort("127.0.0.1:1"), marked.dst}
	wantLookup(t, c, unused, 0, false)
	wantLookup(t, c, marked, ctMark, true)
}

// TestConntrackConcurrentLookups: lookups from many goroutines on one Conntrack each get their
// own flow's answer.
func TestConntrackConcurrentLookups(t *testing.T) {
	c := enterConntrackNetns(t)
	_, marked, _ := ctConn(t, ctPort)
	_, plain, _ := ctConn(t, ctPlainPort)
	unused := flow{netip.MustParseAddrPort("127.0.0.1:1"), marked.dst}
	want := []struct {
		f     flow
		mark  uint32
		found bool
	}{{marked, ctMark, true}, {plain, 0, true}, {unused, 0, false}}
	var wg sync.WaitGroup
	errs := make(chan error, 8*100)
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				w := want[(g+i)%len(want)]
				if m, ok, err := lookup(c, w.f); m != w.mark || ok != w.found || err != nil {
					errs <- fmt.Errorf("Lookup(%v) = %#x, %v, %v; want %#x, %v", w.f, m, ok, err, w.mark, w.found)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConntrackUnansweredRequestTimesOut: a request the kernel never answers (one without
// NLM_F_REQUEST, which the kernel ignores) fails after LookupTimeout instead of hanging, and the
// Conntrack goes on answering lookups.
func TestConntrackUnansweredRequestTimesOut(t *testing.T) {
	c := enterConntrackNetns(t)
	_, marked, _ := ctConn(t, ctPort)
	msg := ctGetMessage(0x51e7, marked.src, marked.dst)
	binary.NativeEndian.PutUint16(msg[6:], 0) // no NLM_F_REQUEST
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, err := c.request(0x51e7, msg)
		done <- err
	}()
	select {
	case err := <-done:
		if took := time.Since(start); !errors.Is(err, os.ErrDeadlineExceeded) || took < LookupTimeout {
			t.Errorf("an unanswered request = %v after %v, want os.ErrDeadlineExceeded after %v", err, took, LookupTimeout)
		}
	case <-time.After(LookupTimeout + 2*time.Second):
		t.Fatalf("an unanswered request still waits after %v", LookupTimeout+2*time.Second)
	}
	wantLookup(t, c, marked, ctMark, true)
}

// TestConntrackClosed: a lookup after Close fails; it never reports a flow as absent.
func TestConntrackClosed(t *testing.T) {
	c := enterConntrackNetns(t)
	_, marked, _ := ctConn(t, ctPort)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if m, ok, err := lookup(c, marked); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Lookup after Close = %#x, %v, %v; want os.ErrClosed", m, ok, err)
	}
}
