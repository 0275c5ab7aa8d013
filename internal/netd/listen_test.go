package netd

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// TestBoundedListener: a listener holds at most its bound of connections; one past it is reset
// at once and logged as refused, and a slot comes back when a connection closes. What it accepts
// still gives its socket to those who read its options (the original destination, for the log).
func TestBoundedListener(t *testing.T) {
	raw, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	ln := bound(raw, 2, newJSONL(log, maxLogBytes), policy.KindModel, policy.ModelPort)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp4", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	held := []net.Conn{dial(), dial()}
	first := <-accepted
	<-accepted
	if _, ok := tcpConn(first); !ok {
		t.Errorf("an accepted %T hides its socket: the original destination of a request could not be read", first)
	}
	over, err := net.Dial("tcp4", raw.Addr().String())
	if err == nil { // on loopback the reset may already fail the dial
		defer over.Close()
		over.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = over.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("a connection past the bound: %v, want it reset", err)
	}
	if r := waitRecords[policy.ConnRecord](t, log, 1)[0]; r.Reason != reasonTooMany || r.Kind != policy.KindModel || r.Verdict != policy.Denied {
		t.Errorf("the refusal was logged as %+v", r)
	}
	first.Close()
	again := dial()
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Error("a closed connection's slot did not come back")
	}
	for _, c := range append(held, again) {
		c.Close()
	}
}
