package netd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/miekg/dns"
)

// inProcChild runs the serving child in this process, on the descriptors the supervisor hands
// it, as the re-executed binary would.
type inProcChild struct {
	addrs    listenAddrs
	upstream string
	exited   chan error // set to fake a crash
}

func (c *inProcChild) start(ctl *os.File, logs []*os.File, _ int) (int, <-chan error, func(), error) {
	files := make([]*os.File, 0, 5)
	for _, f := range append([]*os.File{ctl}, logs...) {
		fd, err := syscall.Dup(int(f.Fd()))
		if err != nil {
			return 0, nil, nil, err
		}
		files = append(files, os.NewFile(uintptr(fd), f.Name()))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveOptions{addrs: c.addrs, upstreamDNS: c.upstream, ctl: files[0],
			dnsLog: files[1], connLog: files[2], mcpLog: files[3], logStats: files[4]})
		closeAll(files[1:])
	}()
	if c.exited != nil {
		go func() { done <- <-c.exited; cancel() }()
	}
	return os.Getpid(), done, cancel, nil
}

// freeAddrs picks loopback ports for the child's listeners.
func freeAddrs(t *testing.T) listenAddrs {
	t.Helper()
	pick := func() string {
		pc, ln := listenSamePort(t)
		defer pc.Close()
		defer ln.Close()
		return ln.Addr().String()
	}
	return listenAddrs{dns: pick(), sni: pick(), http: pick(), mcp: pick(), model: pick()}
}

type supFixture struct {
	dir, logDir string
	addrs       listenAddrs
	nft         *fakeNFT
	child       *inProcChild
	sigs        chan os.Signal
	stdout      *syncBuffer
	result      chan error
	finished    chan struct{} // closed once the supervisor's run has returned
}

func writePolicy(t *testing.T, dir string, egress ...string) {
	t.Helper()
	p := policy.Netd{Version: policy.Version, Project: "p", Egress: egress}
	if err := writeAtomic(filepath.Join(dir, policy.File), p.Marshal()); err != nil {
		t.Fatal(err)
	}
}

func startSupervisor(t *testing.T, nft *fakeNFT, crash chan error, opts ...func(*options)) *supFixture {
	t.Helper()
	return startSupervisorWith(t, nft, crash, policy.Netd{Version: policy.Version, Project: "p", Egress: []string{"git.example.com:22"}}, opts...)
}

// startSupervisorWith starts a supervisor whose first policy is p.
func startSupervisorWith(t *testing.T, nft *fakeNFT, crash chan error, p policy.Netd, opts ...func(*options)) *supFixture {
	t.Helper()
	f := &supFixture{dir: t.TempDir(), logDir: filepath.Join(t.TempDir(), "logs"), addrs: freeAddrs(t), nft: nft,
		sigs: make(chan os.Signal, 1), stdout: &syncBuffer{}, result: make(chan error, 1)}
	if err := writeAtomic(filepath.Join(f.dir, policy.File), p.Marshal()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.dir, policy.RulesFile), policy.Ruleset(policy.NetdUID), 0o644)
	f.child = &inProcChild{addrs: f.addrs, upstream: startUpstream(t).addr, exited: crash}
	st := selfTest{resolvers: []string{f.addrs.dns}, addrs: f.addrs, nft: nft, expected: policy.ExpectedRuleset(policy.NetdUID)}
	o := options{dir: f.dir, logDir: f.logDir, tokenFile: filepath.Join(f.dir, "token"), upstreamDNS: "unused", inProcChild: true}
	for _, opt := range opts {
		opt(&o)
	}
	s := newSupervisor(o, nft, f.child, st, f.stdout)
	f.serve(t, s)
	return f
}

// serve runs s as the fixture's supervisor until the test ends. The log directory is removed
// after the cleanup serve registers, so the supervisor must have stopped writing it by then.
func (f *supFixture) serve(t *testing.T, s *supervisor) {
	f.finished = make(chan struct{})
	go func() {
		f.result <- s.run(context.Background(), f.sigs)
		close(f.finished)
	}()
	t.Cleanup(func() {
		select {
		case f.sigs <- syscall.SIGTERM:
		default:
		}
		select {
		case <-f.finished:
		case <-time.After(10 * time.Second):
			t.Errorf("the supervisor still runs 10 s after SIGTERM")
		}
	})
}

// stopped returns what the supervisor's run returned, failing the test if it is still running
// after 5 s (a refusal takes milliseconds): a supervisor that must refuse to serve and serves
// instead would otherwise hold the test until go test's timeout.
func (f *supFixture) stopped(t *testing.T) error {
	t.Helper()
	select {
	case err := <-f.result:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("the supervisor still runs after 5 s, want it stopped; stdout:\n%s", f.stdout.String())
		return nil
	}
}

// waitEvent waits for the n-th event of the given kind on stdout.
func (f *supFixture) waitEvent(t *testing.T, kind string, n int) policy.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var seen []policy.Event
		for _, e := range logRecords[policy.Event](t, f.stdout) {
			if e.Event == kind {
				seen = append(seen, e)
			}
		}
		if len(seen) >= n {
			return seen[n-1]
		}
		select {
		case err := <-f.result:
			t.Fatalf("supervisor ended (%v) before %s #%d; stdout:\n%s", err, kind, n, f.stdout)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %s #%d event; stdout:\n%s", kind, n, f.stdout)
	return policy.Event{}
}

func (f *supFixture) ask(t *testing.T, name string) *dns.Msg {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	in, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(q, f.addrs.dns)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func okNFT(t *testing.T) *fakeNFT {
	return &fakeNFT{ruleset: readFile(t, "../policy/testdata/live-docker.json"), table: readFile(t, "../policy/testdata/live-docker.json")}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSupervisorLifecycle drives a whole netd: load, self-test, ready, a set request through
// the control channel, a reload, a refused reload, and a stop with counters.
func TestSupervisorLifecycle(t *testing.T) {
	nft := okNFT(t)
	f := startSupervisor(t, nft, nil)
	ready := f.waitEvent(t, policy.EventReady, 1)
	if ready.Detail != "1 egress entries; mcp off; tls fast path off: no queue in this netd" {
		t.Errorf("ready detail = %q", ready.Detail)
	}
	if lines := strings.Count(f.stdout.String(), `"event":"ready"`); lines != 1 {
		t.Errorf("%d ready lines, want exactly 1", lines)
	}
	if c := nft.calls[0]; c != "-f "+filepath.Join(f.dir, policy.RulesFile)+"\n" {
		t.Errorf("first nft call = %q, want the ruleset load", c)
	}

	if in := f.ask(t, "git.example.com."); len(in.Answer) != 2 {
		t.Fatalf("allowed name: %v", in)
	}
	if b := nft.batches(); len(b) != 1 || !strings.Contains(b[0], "add element inet abox agent_dst { 192.0.2.30 . 22 timeout 30s, 192.0.2.31 . 22 timeout 30s }") {
		t.Errorf("set batches = %q", b)
	}
	if in := f.ask(t, "api.example.com."); in.Rcode != dns.RcodeNameError {
		t.Fatalf("api.example.com before reload: %s", dns.RcodeToString[in.Rcode])
	}

	writePolicy(t, f.dir, "git.example.com:22", "api.example.com")
	f.sigs <- syscall.SIGHUP
	f.waitEvent(t, policy.EventReload, 1)
	waitFor(t, func() bool { return f.ask(t, "api.example.com.").Rcode == dns.RcodeSuccess })

	os.WriteFile(filepath.Join(f.dir, policy.File), []byte(`{"version":1,"egress":["http://bad"]}`), 0o644)
	f.sigs <- syscall.SIGHUP
	if e := f.waitEvent(t, policy.EventError, 1); !strings.Contains(e.Detail, "keeping the current policy") {
		t.Errorf("error event = %+v", e)
	}
	f.waitEvent(t, policy.EventReload, 2)
	if in := f.ask(t, "api.example.com."); in.Rcode != dns.RcodeSuccess {
		t.Errorf("after an invalid reload, the previous policy is gone: %s", dns.RcodeToString[in.Rcode])
	}

	// Removing git.example.com:22 closes the addresses opened for it at once.
	writePolicy(t, f.dir, "api.example.com")
	f.sigs <- syscall.SIGHUP
	f.waitEvent(t, policy.EventReload, 3)
	if b := nft.batches(); len(b) != 2 || !strings.Contains(b[1], "delete element inet abox agent_dst { 192.0.2.30 . 22, 192.0.2.31 . 22 }") {
		t.Errorf("set batches after removing git.example.com:22 = %q, want its elements deleted", b)
	}
	waitFor(t, func() bool { return f.ask(t, "git.example.com.").Rcode == dns.RcodeNameError })

	f.sigs <- syscall.SIGTERM
	if err := <-f.result; err != nil {
		t.Fatalf("run after SIGTERM = %v", err)
	}
	var c policy.Counters
	if err := json.Unmarshal(readFile(t, filepath.Join(f.logDir, policy.CountersLog)), &c); err != nil || len(c.Rules) != 45 || c.TS == "" {
		t.Errorf("counters.json = %+v, %v", c, err)
	}
	checkLogFiles(t, f.logDir)
}

// checkLogFiles expects the events in netd.jsonl and the child's DNS decisions in dns.jsonl.
func checkLogFiles(t *testing.T, dir string) {
	t.Helper()
	events := string(readFile(t, filepath.Join(dir, policy.EventLog)))
	for _, e := range []string{`"event":"start"`, `"event":"ready"`, `"event":"reload"`} {
		if !strings.Contains(events, e) {
			t.Errorf("netd.jsonl lacks %s:\n%s", e, events)
		}
	}
	var names []string
	sc := bufio.NewScanner(strings.NewReader(string(readFile(t, filepath.Join(dir, policy.DNSLog)))))
	for sc.Scan() {
		var r policy.DNSRecord
		json.Unmarshal(sc.Bytes(), &r)
		names = append(names, r.Name+" "+r.Verdict)
	}
	// Queries from different goroutines are logged in the order they finish, so only the
	// presence of each decision is checked, and the self-test's coming first.
	want := []string{"abox-selftest.invalid. denied", "git.example.com. allowed", "api.example.com. denied"}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("dns.jsonl = %q, want it to hold %q", names, w)
		}
	}
	if len(names) == 0 || names[0] != want[0] {
		t.Errorf("dns.jsonl = %q, want the self-test's query first", names)
	}
	var st policy.LogStats
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, policy.LogStatsFile)), &st); err != nil || !st.Final {
		t.Fatalf("%s: %+v, %v; want the final statistics", policy.LogStatsFile, st, err)
	}
	if d := fmt.Sprint(st.Logs[policy.DNSLog].Denied); !strings.Contains(d, "{abox-selftest.invalid. 1}") || !strings.Contains(d, "{api.example.com. ") {
		t.Errorf("%s: denied names %s, want the self-test's and api.example.com.", policy.LogStatsFile, d)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5 s")
}

func TestSupervisorFailsClosed(t *testing.T) {
	t.Run("ruleset does not load", func(t *testing.T) {
		nft := okNFT(t)
		nft.loadErr = errFake
		f := startSupervisor(t, nft, nil)
		if err := f.stopped(t); err == nil || !strings.Contains(err.Error(), "loading the ruleset") {
			t.Errorf("run = %v", err)
		}
		if strings.Contains(f.stdout.String(), `"ready"`) {
			t.Error("ready despite a failed load")
		}
	})
	t.Run("live ruleset differs", func(t *testing.T) {
		nft := okNFT(t)
		nft.ruleset = []byte(strings.Replace(string(nft.ruleset), `"policy": "drop"`, `"policy": "accept"`, 1))
		f := startSupervisor(t, nft, nil)
		if err := f.stopped(t); err == nil || !strings.Contains(err.Error(), "self-test: loaded ruleset") {
			t.Errorf("run = %v", err)
		}
		if strings.Contains(f.stdout.String(), `"ready"`) {
			t.Error("ready despite a wrong ruleset")
		}
	})
	t.Run("ports unprivileged in the namespace", func(t *testing.T) {
		procSys := t.TempDir()
		writeSysctl(t, procSys, "0") // Docker's default in a container
		f := startSupervisor(t, okNFT(t), nil, func(o *options) { o.procSys = procSys })
		if err := f.stopped(t); err == nil || !strings.Contains(err.Error(), "ip_unprivileged_port_start is 0") {
			t.Errorf("run = %v", err)
		}
		if strings.Contains(f.stdout.String(), `"ready"`) {
			t.Error("ready in a namespace where the agent could bind port 53")
		}
	})
	t.Run("child dies", func(t *testing.T) {
		crash := make(chan error, 1)
		f := startSupervisor(t, okNFT(t), crash)
		f.waitEvent(t, policy.EventReady, 1)
		crash <- errFake
		if err := f.stopped(t); err == nil || !strings.Contains(err.Error(), "serving child exited") {
			t.Errorf("run after the child died = %v, want an error", err)
		}
	})
}

// hostileChild is the supervisor's end of a control channel whose other end the test drives.
func hostileChild(t *testing.T) (*supervisor, *runningChild, net.Conn, *syncBuffer) {
	t.Helper()
	mine, theirs := net.Pipe()
	out := &syncBuffer{}
	s := newSupervisor(options{}, &fakeNFT{}, nil, selfTest{}, out)
	s.sets.setRules(context.Background(), testRules(t, "git.example.com:22"))
	rc := &runningChild{ctl: newCtlConn(mine), listening: make(chan struct{}), ctlDone: make(chan error, 1)}
	go s.serveControl(rc)
	t.Cleanup(func() { theirs.Close() })
	return s, rc, theirs, out
}

func TestSupervisorRefusesHostileChild(t *testing.T) {
	s, rc, child, out := hostileChild(t)
	r := bufio.NewReader(child)
	send := func(line string) message {
		t.Helper()
		io.WriteString(child, line+"\n")
		b, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m message
		json.Unmarshal(b, &m)
		return m
	}
	for _, line := range []string{
		`{"op":"add","id":1,"set":{"set":"agent_dst","addrs":["169.254.169.254"],"ports":[22],"timeout":60}}`,
		`{"op":"add","id":2,"set":{"set":"agent_dst","addrs":["192.0.2.1"],"ports":[443],"timeout":60}}`,
		`{"op":"add","id":3,"set":{"set":"filter","addrs":["192.0.2.1"],"ports":[22],"timeout":60}}`,
		`{"op":"add","id":4}`,
		`{"op":"add","id":6,"set":{"set":"agent_dst","addrs":["192.0.2.1"],"ports":[22],"timeout":60}}`,
		`{"op":"add","id":7,"set":{"set":"agent_dst","name":"evil.example.com","addrs":["192.0.2.1"],"ports":[22],"timeout":60}}`,
	} {
		if m := send(line); m.Op != opResult || m.Error == "" {
			t.Errorf("%s answered %+v, want a refusal", line, m)
		}
	}
	if b := s.nft.(*fakeNFT).batches(); len(b) != 0 {
		t.Errorf("nft ran for refused requests: %q", b)
	}
	io.WriteString(child, `{"op":"event","event":"ready","detail":"forged"}`+"\n")
	io.WriteString(child, `{"op":"add","id":5,"set":{"set":"agent_dst","addrs":["not-an-ip"],"ports":[22],"timeout":60}}`+"\n")
	select {
	case err := <-rc.ctlDone:
		if err == nil {
			t.Error("malformed request did not end the control channel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("malformed request left the control channel open")
	}
	if strings.Contains(out.String(), "forged") || strings.Contains(out.String(), `"ready"`) {
		t.Errorf("the child forged an event:\n%s", out)
	}
}

func TestSupervisorControlLineLimit(t *testing.T) {
	_, rc, child, _ := hostileChild(t)
	go func() {
		chunk := []byte(strings.Repeat("x", 1<<20))
		for i := 0; i < 6; i++ {
			if _, err := child.Write(chunk); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-rc.ctlDone:
		if err == nil || !strings.Contains(err.Error(), "line too long") {
			t.Errorf("ctlDone = %v, want line too long", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an endless line was buffered")
	}
}

// writeSysctl writes net.ipv4.ip_unprivileged_port_start under a fake /proc/sys.
func writeSysctl(t *testing.T, procSys, value string) {
	t.Helper()
	dir := filepath.Join(procSys, "net", "ipv4")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ip_unprivileged_port_start"), []byte(value+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSupervisorGuardsTheNamespace: with the setting right, netd opens the gateway's address
// for itself, with no timeout and outside every budget, reserves it and the namespace's own
// address against every request of the child, and hands the child the gateway's address.
func TestSupervisorGuardsTheNamespace(t *testing.T) {
	procSys := t.TempDir()
	writeSysctl(t, procSys, "1024")
	nft := okNFT(t)
	own := netip.MustParseAddr("172.18.0.9")
	gw := netip.MustParseAddrPort("172.18.0.2:8811")
	f := startSupervisor(t, nft, nil, func(o *options) {
		o.procSys, o.gateway = procSys, gw
		o.own = func() ([]netip.Addr, error) { return []netip.Addr{own}, nil }
	})
	f.waitEvent(t, policy.EventReady, 1)
	want := "add element inet abox netd_dst { 172.18.0.2 . 8811 }\n"
	if b := nft.batches(); !slices.ContainsFunc(b, func(s string) bool { return strings.HasSuffix(s, want) }) {
		t.Errorf("batches = %q, want the gateway opened without a timeout", b)
	}
	sup := newSupervisor(options{gateway: gw}, nft, nil, selfTest{}, &syncBuffer{})
	if got := sup.configMessage().Gateway; got != gw.String() {
		t.Errorf("the child is given gateway %q, want %v", got, gw)
	}
	sup.o.own = func() ([]netip.Addr, error) { return []netip.Addr{own}, nil }
	if err := sup.guardNamespace(context.Background()); err != nil {
		t.Fatal(err)
	}
	sup.sets.setRules(context.Background(), testRules(t, "git.example.com:22", "api.example.com"))
	for _, r := range []setRequest{
		{Set: policy.SetNetd, Name: "api.example.com", Addrs: []netip.Addr{gw.Addr()}, Ports: []int{443}, Timeout: 60},
		{Set: policy.SetAgent, Name: "git.example.com", Addrs: []netip.Addr{own}, Ports: []int{22}, Timeout: 60},
	} {
		if err := sup.sets.add(context.Background(), r); !errors.Is(err, errRefused) || !errors.Is(err, errReserved) {
			t.Errorf("add %v = %v, want it refused as reserved", r.Addrs, err)
		}
	}
}

// TestSupervisorFinishThenIdle: the finish signal stops the child and writes the counters, like a
// stop, reports "finished" only after both, and leaves the supervisor up, serving nothing, until
// the stop that follows. Without the finish, abox would have to wait for the container's whole
// exit before it could copy the logs.
func TestSupervisorFinishThenIdle(t *testing.T) {
	nft := okNFT(t)
	f := startSupervisor(t, nft, nil)
	f.waitEvent(t, policy.EventReady, 1)
	nft.mu.Lock()
	nft.tableDelay = 300 * time.Millisecond // a slow read of the counters
	nft.mu.Unlock()
	f.sigs <- syscall.SIGUSR1
	f.waitEvent(t, policy.EventFinished, 1)
	var c policy.Counters
	if err := json.Unmarshal(readFile(t, filepath.Join(f.logDir, policy.CountersLog)), &c); err != nil || c.TS == "" {
		t.Fatalf("counters.json when finished = %+v, %v; want them written before the event", c, err)
	}
	if _, err := net.DialTimeout("tcp", f.addrs.sni, time.Second); err == nil {
		t.Errorf("the TLS listener still accepts after the finish")
	}
	for _, sig := range []os.Signal{syscall.SIGUSR1, syscall.SIGHUP} {
		f.sigs <- sig
		select {
		case err := <-f.result:
			t.Fatalf("the supervisor ended (%v) on %v after the finish; want it idle until a stop", err, sig)
		case <-time.After(200 * time.Millisecond):
		}
	}
	f.sigs <- syscall.SIGTERM
	if err := f.stopped(t); err != nil {
		t.Fatalf("run after the finish and SIGTERM = %v", err)
	}
	if n := strings.Count(f.stdout.String(), `"event":"finished"`); n != 1 {
		t.Errorf("%d finished lines, want 1:\n%s", n, f.stdout)
	}
	if !strings.Contains(f.stdout.String(), `"event":"stop"`) {
		t.Errorf("no stop event after the finish:\n%s", f.stdout)
	}
}
