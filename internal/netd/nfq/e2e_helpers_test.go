//go:build e2e && linux

package nfq

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests run the queue against the kernel, as root, each in a network namespace of its
// own that holds only loopback: no packet leaves it. The ruleset is an example of the shape netd
// will use, not netd's: a flow to the test port is queued until its conntrack mark has the
// verified bit; a packet repeated with the allow mark sets that bit and passes, one repeated
// with the deny mark is answered with a TCP reset.

const (
	testQueue  = 7
	testPort   = 7001
	markAllow  = 0x10
	markDeny   = 0x20
	ctVerified = 0x1
)

// ruleset is loaded first; the rule of chain nfq that queues is added after it, natively
// when the kernel has nft_queue and otherwise as the xtables NFQUEUE target, through
// iptables-nft, whose table the ruleset's is named after (some kernels build NFQUEUE for
// xtables only: CONFIG_NETFILTER_XT_TARGET_NFQUEUE without CONFIG_NFT_QUEUE). Either way there
// is no bypass: a packet nobody decides is dropped.
var ruleset = fmt.Sprintf(`table ip filter {
	chain out {
		type filter hook output priority filter; policy accept;
		meta mark %#x counter ct mark set ct mark or %#x accept
		meta mark %#x counter meta l4proto tcp reject with tcp reset
		ip daddr 127.0.0.1 tcp dport %d ct mark and %#x == 0 counter jump nfq
	}
	chain nfq {
	}
}
`, markAllow, ctVerified, markDeny, testPort, ctVerified)

// loadRuleset loads ruleset and its queue rule.
func loadRuleset(t *testing.T) {
	t.Helper()
	run(t, ruleset, "nft", "-f", "-")
	native := exec.Command("nft", "add", "rule", "ip", "filter", "nfq", "queue", "num", strconv.Itoa(testQueue))
	if out, err := native.CombinedOutput(); err != nil {
		t.Logf("no nft queue expression (%v: %s); using the xtables NFQUEUE target", err, bytes.TrimSpace(out))
		run(t, "", "iptables-nft", "-A", "nfq", "-j", "NFQUEUE", "--queue-num", strconv.Itoa(testQueue))
	}
}

// enterNetns moves the calling goroutine into a new network namespace with loopback up and the
// test ruleset loaded. The goroutine's thread is locked and never unlocked, so the thread, and
// with it the namespace, ends with the test. Sockets must be created on this goroutine; other
// goroutines may use them.
func enterNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the nfq e2e tests need root (CAP_NET_ADMIN) to make a namespace and bind a queue")
	}
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		t.Fatalf("unshare(CLONE_NEWNET): %v", err)
	}
	ours, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	// A program started from this thread inherits its namespace; check that before loading
	// anything, so a ruleset never lands in the host's namespace.
	if got := strings.TrimSpace(run(t, "", "readlink", "/proc/self/ns/net")); got != ours {
		t.Fatalf("a child runs in namespace %s, not the test's %s", got, ours)
	}
	run(t, "", "ip", "link", "set", "lo", "up")
	loadRuleset(t)
}

// run runs a program with stdin and returns its output, failing the test if it fails.
func run(t *testing.T, stdin string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// counters returns the packet counts of the ruleset's rules, in order: allow, deny, queue.
func counters(t *testing.T) [3]int {
	t.Helper()
	out := run(t, "", "nft", "list", "chain", "ip", "filter", "out")
	m := regexp.MustCompile(`counter packets (\d+)`).FindAllStringSubmatch(out, -1)
	if len(m) != 3 {
		t.Fatalf("nft list chain: %d counters, want 3:\n%s", len(m), out)
	}
	var c [3]int
	for i := range c {
		c[i], _ = strconv.Atoi(m[i][1])
	}
	return c
}

// listen listens on the test port and returns the listener and a channel of what each
// accepted connection received before its peer closed or reset it, or a read timed out.
func listen(t *testing.T) <-chan []byte {
	t.Helper()
	ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", testPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				b, _ := io.ReadAll(c)
				got <- b
			}()
		}
	}()
	return got
}

// dial connects to the test port within timeout.
func dial(timeout time.Duration) (*net.TCPConn, error) {
	c, err := net.DialTimeout("tcp4", fmt.Sprintf("127.0.0.1:%d", testPort), timeout)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// decider serves a queue the way netd will: segments without payload pass; a flow's payload
// is gathered until its first line, "ALLOW" repeats its packets with the allow mark and
// anything else with the deny mark. With hold, the packets of an unfinished line wait for the
// decision; without, they pass at once.
type decider struct {
	q    *Queue
	hold bool

	mu       sync.Mutex
	seen     []queued // every queued segment, in the order the queue gave them
	lines    map[uint16][]byte
	held     map[uint16][]uint32
	verdicts []error
	data     chan Segment // every queued segment with payload
}

func serve(t *testing.T, cfg Config, hold bool) *decider {
	t.Helper()
	q, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	d := &decider{q: q, hold: hold, lines: map[uint16][]byte{}, held: map[uint16][]uint32{},
		data: make(chan Segment, 64)}
	done := make(chan struct{})
	go d.loop(done)
	t.Cleanup(func() {
		q.Close()
		<-done
		if err := errors.Join(d.verdicts...); err != nil {
			t.Errorf("verdicts: %v", err)
		}
		if s := q.Stats(); s != (Stats{}) {
			t.Errorf("queue stats %+v, want all zero", s)
		}
	})
	return d
}

func (d *decider) loop(done chan<- struct{}) {
	defer close(done)
	for {
		p, err := d.q.Recv()
		if err != nil {
			return
		}
		seg, err := ParseSegment(p.Payload)
		if err != nil {
			d.note(d.q.Drop(p.ID))
			continue
		}
		seg.Payload = bytes.Clone(seg.Payload)
		d.mu.Lock()
		d.seen = append(d.seen, queued{seg, p.GSO})
		d.mu.Unlock()
		d.decide(p.ID, seg)
		if len(seg.Payload) > 0 {
			select {
			case d.data <- seg:
			default: // a test that waits for no more than it asked for never blocks the queue
			}
		}
	}
}

// decide gives the packet id, which carried seg, its verdict.
func (d *decider) decide(id uint32, seg Segment) {
	if len(seg.Payload) == 0 {
		d.note(d.q.Accept(id))
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lines[seg.SrcPort] = append(d.lines[seg.SrcPort], seg.Payload...)
	line, _, complete := bytes.Cut(d.lines[seg.SrcPort], []byte("\n"))
	if !complete {
		if d.hold {
			d.held[seg.SrcPort] = append(d.held[seg.SrcPort], id)
		} else {
			d.note(d.q.Accept(id))
		}
		return
	}
	mark := uint32(markDeny)
	if string(line) == "ALLOW" {
		mark = markAllow
	}
	for _, h := range append(d.held[seg.SrcPort], id) {
		d.note(d.q.Repeat(h, mark))
	}
}

func (d *decider) note(err error) {
	if err != nil {
		d.verdicts = append(d.verdicts, err)
	}
}

// queued is a segment the queue gave, and whether its packet was a GSO packet.
type queued struct {
	Segment
	gso bool
}

// flow returns the segments the queue saw from local port port.
func (d *decider) flow(port uint16) []queued {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []queued
	for _, s := range d.seen {
		if s.SrcPort == port {
			out = append(out, s)
		}
	}
	return out
}

// localPort is the client's port of c.
func localPort(c net.Conn) uint16 { return uint16(c.LocalAddr().(*net.TCPAddr).Port) }

// describe lists segments as "SYN", their flags or the start of their payload, for messages.
func describe(segs []queued) []string {
	var out []string
	for _, s := range segs {
		switch {
		case s.Flags&SYN != 0:
			out = append(out, "SYN")
		case len(s.Payload) == 0:
			out = append(out, fmt.Sprintf("flags %#x", s.Flags))
		case len(s.Payload) > 16:
			out = append(out, fmt.Sprintf("%q… (%d bytes)", s.Payload[:16], len(s.Payload)))
		default:
			out = append(out, strconv.Quote(string(s.Payload)))
		}
	}
	return out
}

// connectAsync starts a non-blocking connect to the test port from this goroutine (so in the
// test's namespace) and returns its socket; the SYN is sent before it returns.
func connectAsync(t *testing.T) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	err = unix.Connect(fd, &unix.SockaddrInet4{Port: testPort, Addr: [4]byte{127, 0, 0, 1}})
	if err != unix.EINPROGRESS {
		t.Fatalf("connect = %v, want EINPROGRESS", err)
	}
	return fd
}

// connected waits up to timeout for the connect on fd to finish and returns its result.
func connected(fd int, timeout time.Duration) error {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	if n, err := unix.Poll(pfd, int(timeout.Milliseconds())); err != nil || n == 0 {
		return fmt.Errorf("connect not done after %v (%v)", timeout, err)
	}
	if soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soerr != 0 {
		return fmt.Errorf("connect: %v", errors.Join(err, unix.Errno(soerr)))
	}
	return nil
}

// gsoFlags lists whether each segment came in a GSO packet, for messages.
func gsoFlags(segs []queued) []bool {
	var out []bool
	for _, s := range segs {
		out = append(out, s.gso)
	}
	return out
}
