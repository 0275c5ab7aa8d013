package netd

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/miekg/dns"
)

// upstream is a fake recursive resolver on loopback that counts what it is asked.
type upstream struct {
	addr  string
	mu    sync.Mutex
	asked []string
}

func (u *upstream) questions() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.asked)
}

// startUpstream serves a fixed zone over UDP and TCP on one loopback port.
func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		q := r.Question[0]
		u.mu.Lock()
		u.asked = append(u.asked, w.RemoteAddr().Network()+" "+dns.TypeToString[q.Qtype]+" "+q.Name)
		u.mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(r)
		zone(m, q)
		if _, udp := w.RemoteAddr().(*net.UDPAddr); udp && m.Len() > dns.MinMsgSize {
			m.Truncate(dns.MinMsgSize)
		}
		w.WriteMsg(m)
	})
	pc, ln := listenSamePort(t)
	udp, tcp := &dns.Server{PacketConn: pc, Handler: h}, &dns.Server{Listener: ln, Handler: h}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() { udp.Shutdown(); tcp.Shutdown() })
	u.addr = pc.LocalAddr().String()
	return u
}

// listenSamePort listens for UDP and TCP on one free loopback port, as a resolver does.
func listenSamePort(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if ln, err := net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			return pc, ln
		}
		pc.Close()
	}
	t.Fatal("no loopback port free for both UDP and TCP")
	return nil, nil
}

// zone answers the fake upstream's questions.
func zone(m *dns.Msg, q dns.Question) {
	rr := func(s string) dns.RR { r, _ := dns.NewRR(s); return r }
	switch strings.ToLower(q.Name) {
	case "api.example.com.":
		m.Answer = append(m.Answer, rr("api.example.com. 120 IN A 192.0.2.10"))
	case "git.example.com.":
		m.Answer = append(m.Answer, rr("git.example.com. 10 IN A 192.0.2.30"), rr("git.example.com. 10 IN A 192.0.2.31"))
	case "cdn.example.com.":
		m.Answer = append(m.Answer, rr("cdn.example.com. 300 IN CNAME edge.example.net."), rr("edge.example.net. 60 IN A 192.0.2.20"))
	case "rebind.example.com.": // a zone its owner points at places netd must never open
		for _, a := range []string{"127.0.0.1", "172.18.0.2", "169.254.169.254", "192.0.2.40"} {
			m.Answer = append(m.Answer, rr("rebind.example.com. 60 IN A "+a))
		}
	case "metadata.example.com.": // nothing but what a set may never hold
		for _, a := range []string{"169.254.169.254", "127.0.0.11", "240.0.0.1", "0.1.2.3", "255.255.255.255"} {
			m.Answer = append(m.Answer, rr("metadata.example.com. 60 IN A "+a))
		}
	case "loopback.example.com.":
		m.Answer = append(m.Answer, rr("loopback.example.com. 60 IN A 127.0.0.1"), rr("loopback.example.com. 60 IN A 127.0.0.11"))
	case "big.example.com.":
		for i := range 60 {
			m.Answer = append(m.Answer, rr(fmt.Sprintf("big.example.com. 60 IN A 198.51.100.%d", i+1)))
		}
	default:
		m.Rcode = dns.RcodeNameError
	}
}

type dnsFixture struct {
	sets     *fakeSets
	log      *syncBuffer
	udp, tcp string
	handler  *dnsHandler
}

func startDNS(t *testing.T, upstreamAddr string) *dnsFixture {
	t.Helper()
	f := &dnsFixture{sets: &fakeSets{}, log: &syncBuffer{}}
	f.handler = &dnsHandler{
		cfg:  testConfig(t, []string{"api.example.com", "*.example.org", "git.example.com:22", "cdn.example.com", "big.example.com", "web.example.com:80", "rebind.example.com:22", "loopback.example.com"}, nil, ""),
		res:  newResolver(upstreamAddr),
		sets: f.sets,
		log:  newJSONL(f.log, maxLogBytes),
		now:  time.Now,
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	udp, tcp := dnsServers(f.handler, pc, ln)
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() { udp.Shutdown(); tcp.Shutdown() })
	f.udp, f.tcp = pc.LocalAddr().String(), ln.Addr().String()
	return f
}

func (f *dnsFixture) ask(t *testing.T, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	addr := f.udp
	if network == "tcp" {
		addr = f.tcp
	}
	in, _, err := (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(q, addr)
	if err != nil {
		t.Fatalf("asking %s %s: %v", network, name, err)
	}
	return in
}

func TestDNSAnswers(t *testing.T) {
	up := startUpstream(t)
	tests := []struct {
		name      string
		qname     string
		qtype     uint16
		rcode     int
		answers   []string // A records expected, in order
		forwarded bool
		verdict   string
	}{
		{"allowed A", "api.example.com.", dns.TypeA, dns.RcodeSuccess, []string{"192.0.2.10"}, true, policy.Allowed},
		{"case variant", "API.Example.COM.", dns.TypeA, dns.RcodeSuccess, []string{"192.0.2.10"}, true, policy.Allowed},
		{"cname chain", "cdn.example.com.", dns.TypeA, dns.RcodeSuccess, []string{"192.0.2.20"}, true, policy.Allowed},
		{"denied", "evil.example.com.", dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
		{"subdomain of an exact entry", "x.api.example.com.", dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
		{"allowed name as a prefix", "api.example.com.evil.net.", dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
		{"wildcard subdomain", "a.b.example.org.", dns.TypeA, dns.RcodeNameError, nil, true, policy.Allowed},
		{"wildcard apex", "example.org.", dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
		{"allowed AAAA", "api.example.com.", dns.TypeAAAA, dns.RcodeSuccess, nil, false, policy.Allowed},
		{"allowed TXT", "api.example.com.", dns.TypeTXT, dns.RcodeSuccess, nil, false, policy.Allowed},
		{"denied TXT", "evil.example.com.", dns.TypeTXT, dns.RcodeNameError, nil, false, policy.Denied},
		{"escaped byte", `a\000b.example.org.`, dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
		{"escaped dot", `api\.example.com.`, dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
		{"underscore", "_srv.example.org.", dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
		{"longest name", strings.Repeat(strings.Repeat("a", 61)+".", 4) + "org.", dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
		{"ip literal", "192.0.2.1.", dns.TypeA, dns.RcodeNameError, nil, false, policy.Denied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, network := range []string{"udp", "tcp"} {
				f := startDNS(t, up.addr)
				before := len(up.questions())
				in := f.ask(t, network, tc.qname, tc.qtype)
				if in.Rcode != tc.rcode {
					t.Errorf("%s: rcode = %s, want %s", network, dns.RcodeToString[in.Rcode], dns.RcodeToString[tc.rcode])
				}
				if got := aRecords(in); !slices.Equal(got, tc.answers) {
					t.Errorf("%s: answers = %v, want %v", network, got, tc.answers)
				}
				if forwarded := len(up.questions()) > before; forwarded != tc.forwarded {
					t.Errorf("%s: forwarded = %v, want %v", network, forwarded, tc.forwarded)
				}
				recs := waitRecords[policy.DNSRecord](t, f.log, 1)
				if r := recs[0]; r.Verdict != tc.verdict || r.RCode != dns.RcodeToString[tc.rcode] || r.Type != dns.TypeToString[tc.qtype] {
					t.Errorf("%s: logged %+v, want verdict %s", network, r, tc.verdict)
				}
			}
		})
	}
}

func aRecords(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out
}

func TestDNSEchoesQuestionCase(t *testing.T) {
	f := startDNS(t, startUpstream(t).addr)
	in := f.ask(t, "udp", "ApI.eXaMpLe.CoM.", dns.TypeA)
	if len(in.Answer) != 1 || in.Answer[0].Header().Name != "ApI.eXaMpLe.CoM." {
		t.Errorf("answer = %v, want the owner name spelled as asked", in.Answer)
	}
}

func TestDNSOpensNonTLSPorts(t *testing.T) {
	f := startDNS(t, startUpstream(t).addr)
	f.ask(t, "udp", "api.example.com.", dns.TypeA)
	if reqs := f.sets.requests(); len(reqs) != 0 {
		t.Fatalf("a 443-only name opened %v", reqs)
	}
	f.ask(t, "udp", "web.example.com.", dns.TypeA) // allowed on 80 only: NXDOMAIN upstream, no address
	f.ask(t, "udp", "git.example.com.", dns.TypeA)
	want := setRequest{Set: policy.SetAgent, Name: "git.example.com", Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.30"), netip.MustParseAddr("192.0.2.31")}, Ports: []int{22}, Timeout: 30}
	reqs := f.sets.requests()
	if len(reqs) != 1 || fmt.Sprint(reqs[0]) != fmt.Sprint(want) {
		t.Errorf("set requests = %v, want [%v]", reqs, want)
	}
}

// TestDNSOpensTLSFastPath: with the TLS fast path on, an answer for a name allowed on 443 opens
// its addresses on 443 in the TLS set, but for the reserved ones; a name not allowed on 443 opens
// nothing there, and with the fast path off nothing is opened on 443 at all.
func TestDNSOpensTLSFastPath(t *testing.T) {
	f := startDNS(t, startUpstream(t).addr)
	f.ask(t, "udp", "api.example.com.", dns.TypeA)
	if reqs := f.sets.requests(); len(reqs) != 0 {
		t.Fatalf("fast path off: a 443 name opened %v", reqs)
	}
	cfg := f.handler.cfg.get()
	on := *cfg
	on.tlsFast = true
	f.handler.cfg.set(&on)
	f.handler.allowed = destinationCheck(f.handler.cfg, nil)
	f.ask(t, "udp", "api.example.com.", dns.TypeA)
	f.ask(t, "udp", "rebind.example.com.", dns.TypeA) // allowed on 22 only
	f.ask(t, "udp", "loopback.example.com.", dns.TypeA)
	want := setRequest{Set: policy.SetTLS, Name: "api.example.com", Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, Ports: []int{443}, Timeout: 120}
	var tls []setRequest
	for _, r := range f.sets.requests() {
		if r.Set == policy.SetTLS {
			tls = append(tls, r)
		}
	}
	if len(tls) != 1 || fmt.Sprint(tls[0]) != fmt.Sprint(want) {
		t.Errorf("TLS set requests = %v, want [%v]", tls, want)
	}
}

// TestDNSOpensNoReservedAddress: an allowed name whose zone answers with loopback, the gateway's
// address or link-local (cloud metadata) still resolves for the agent, but only the ordinary
// address is opened on its non-TLS port; the log says what was left out.
func TestDNSOpensNoReservedAddress(t *testing.T) {
	f := startDNS(t, startUpstream(t).addr)
	f.handler.allowed = destinationCheck(testConfig(t, nil, nil, "", "172.18.0.2:8811"), nil)
	in := f.ask(t, "udp", "rebind.example.com.", dns.TypeA)
	if len(in.Answer) != 4 {
		t.Errorf("answer = %v, want the zone's answer as it came", in.Answer)
	}
	want := setRequest{Set: policy.SetAgent, Name: "rebind.example.com", Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.40")}, Ports: []int{22}, Timeout: 60}
	if reqs := f.sets.requests(); len(reqs) != 1 || fmt.Sprint(reqs[0]) != fmt.Sprint(want) {
		t.Errorf("set requests = %v, want only [%v]", reqs, want)
	}
	r := waitRecords[policy.DNSRecord](t, f.log, 1)[0]
	if !strings.Contains(r.Reason, "not opened") {
		t.Errorf("logged %+v, want the addresses left out named", r)
	}
}

func TestDNSReportsSetFailure(t *testing.T) {
	f := startDNS(t, startUpstream(t).addr)
	f.sets.err = errFake
	in := f.ask(t, "udp", "git.example.com.", dns.TypeA)
	if in.Rcode != dns.RcodeSuccess || len(in.Answer) != 2 {
		t.Errorf("answer = %v, want the addresses even if the ports could not be opened", in)
	}
	r := waitRecords[policy.DNSRecord](t, f.log, 1)[0]
	if r.Verdict != policy.Error || !strings.Contains(r.Reason, "fake failure") {
		t.Errorf("logged %+v, want an error verdict naming the failure", r)
	}
}

func TestDNSTruncationAndTCPFallback(t *testing.T) {
	up := startUpstream(t)
	f := startDNS(t, up.addr)
	in := f.ask(t, "udp", "big.example.com.", dns.TypeA)
	if !in.Truncated {
		t.Errorf("UDP answer of 60 records not truncated (%d bytes)", in.Len())
	}
	if got := up.questions(); !slices.Contains(got, "tcp A big.example.com.") {
		t.Errorf("upstream questions %v: netd did not retry over TCP", got)
	}
	if in := f.ask(t, "tcp", "big.example.com.", dns.TypeA); len(in.Answer) != 60 || in.Truncated {
		t.Errorf("TCP answer has %d records (truncated %v), want 60", len(in.Answer), in.Truncated)
	}
}

func TestDNSUpstreamDown(t *testing.T) {
	pc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	dead := pc.LocalAddr().String()
	pc.Close()
	f := startDNS(t, dead)
	if in := f.ask(t, "udp", "api.example.com.", dns.TypeA); in.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode = %s, want SERVFAIL", dns.RcodeToString[in.Rcode])
	}
	if r := waitRecords[policy.DNSRecord](t, f.log, 1)[0]; r.Verdict != policy.Error {
		t.Errorf("logged %+v, want verdict error", r)
	}
}

func TestDNSMalformedQueries(t *testing.T) {
	up := startUpstream(t)
	f := startDNS(t, up.addr)
	two := new(dns.Msg)
	two.SetQuestion("api.example.com.", dns.TypeA)
	two.Question = append(two.Question, dns.Question{Name: "evil.example.com.", Qtype: dns.TypeA, Qclass: dns.ClassINET})
	chaos := new(dns.Msg)
	chaos.SetQuestion("api.example.com.", dns.TypeTXT)
	chaos.Question[0].Qclass = dns.ClassCHAOS
	update := new(dns.Msg)
	update.SetUpdate("example.org.")
	cases := []struct {
		msg   *dns.Msg
		rcode int
	}{{two, dns.RcodeFormatError}, {chaos, dns.RcodeRefused}, {update, dns.RcodeNotImplemented}}
	for _, c := range cases {
		in, _, err := new(dns.Client).Exchange(c.msg, f.udp)
		if err != nil || in.Rcode != c.rcode {
			t.Errorf("query %v: rcode %v, %v; want %s", c.msg.Question, in, err, dns.RcodeToString[c.rcode])
		}
	}
	// Junk gets no answer, and the server keeps serving.
	conn, err := net.Dial("udp", f.udp)
	if err != nil {
		t.Fatal(err)
	}
	for _, junk := range [][]byte{{0}, []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), make([]byte, 600)} {
		conn.Write(junk)
	}
	conn.Close()
	if in := f.ask(t, "udp", "api.example.com.", dns.TypeA); len(in.Answer) != 1 {
		t.Errorf("after junk: answer %v", in)
	}
	if got := up.questions(); len(got) != 1 {
		t.Errorf("upstream was asked %v, want only the valid query", got)
	}
}
