package netd

import (
	"bytes"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// The TLS proxy's relay moves a tunnel's bytes with splice(2), socket to pipe to socket, never
// through netd's memory: Go's TCPConn.ReadFrom does so only when both ends are bare
// *net.TCPConn, so any wrapper on either side (a counting reader, a prefix reader for the
// replayed ClientHello, a deadline wrapper) would silently turn the relay into a userspace copy
// of every byte. The kernel counts what a process moves with read(2) and write(2) in
// /proc/self/io (rchar, wchar) and not what it splices, so a relay that copies shows up there
// as a second copy of the payload.

// bulkThroughSNI opens one tunnel through f to upstream ln, sends up bytes after the
// ClientHello and receives down bytes, and returns what each side saw.
func bulkThroughSNI(t testing.TB, f *sniFixture, ln net.Listener, up, down int) (gotUp, gotDown int64) {
	t.Helper()
	upstream := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			upstream <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c) // until the agent's half-close, passed on by the relay
		w := bytes.NewReader(make([]byte, down))
		io.Copy(c, w)
		upstream <- n
	}()
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write(realHello(t, "api.example.com")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(c, bytes.NewReader(make([]byte, up))); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	gotDown, err = io.Copy(io.Discard, c)
	if err != nil {
		t.Fatal(err)
	}
	return <-upstream, gotDown
}

// ioBytes returns the bytes this process has read and written with read(2)/write(2) and the
// like, from /proc/self/io.
func ioBytes(t testing.TB) (rchar, wchar int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatalf("reading the process's I/O counters: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "rchar":
			rchar = n
		case "wchar":
			wchar = n
		}
	}
	return rchar, wchar
}

func TestSNIProxyRelaySplices(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f := startSNI(t, ln.Addr().(*net.TCPAddr).Port, fakeDNS{"api.example.com": loopback}, time.Second, 8)
	const up, down = 8 << 20, 64 << 20
	r0, w0 := ioBytes(t)
	gotUp, gotDown := bulkThroughSNI(t, f, ln, up, down)
	r1, w1 := ioBytes(t)
	hello := int64(len(realHello(t, "api.example.com")))
	if gotUp != hello+up || gotDown != down {
		t.Fatalf("upstream got %d bytes, agent got %d; want %d and %d", gotUp, gotDown, hello+up, down)
	}
	// The test's own two ends read and write the payload once each way: up+down bytes read
	// (upstream and agent) and as many written. A relay copying either direction in userspace
	// would add that direction's bytes again (at least up); a splicing one adds the ClientHello
	// and a log line. No test of this package runs in parallel with this one.
	own, slack := hello+up+down, int64(up/4)
	if extra := (r1 - r0) - own; extra > slack {
		t.Errorf("the process read %d bytes beyond its own ends' %d: the relay copies the tunnel through userspace instead of splicing", extra, own)
	}
	if extra := (w1 - w0) - own; extra > slack {
		t.Errorf("the process wrote %d bytes beyond its own ends' %d: the relay copies the tunnel through userspace instead of splicing", extra, own)
	}
	rec := waitRecords[policy.ConnRecord](t, f.log, 1)[0]
	if rec.BytesUp != hello+up || rec.BytesDown != down {
		t.Errorf("logged %d up, %d down; want %d, %d", rec.BytesUp, rec.BytesDown, hello+up, down)
	}
}

// BenchmarkSNIRelay measures the relay on loopback, 64 MiB down per tunnel; with -cpuprofile
// it shows where netd's side of a bulk transfer goes (the kernel's, mostly: see BENCHMARKS.md).
func BenchmarkSNIRelay(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	f := startSNI(b, ln.Addr().(*net.TCPAddr).Port, fakeDNS{"api.example.com": loopback}, time.Second, 8)
	const down = 64 << 20
	b.SetBytes(down)
	for b.Loop() {
		if _, got := bulkThroughSNI(b, f, ln, 0, down); got != down {
			b.Fatalf("got %d bytes, want %d", got, down)
		}
	}
}
