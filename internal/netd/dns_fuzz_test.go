package netd

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/miekg/dns"
)

// fuzzEgress is the allowlist of FuzzDNSHandler: an exact name, a wildcard, a name on a non-TLS
// port only, and one opted in on port 80.
var fuzzEgress = []string{"api.example.com", "*.example.org", "git.example.com:22", "web.example.com:80"}

// answerAll is an upstream that answers every question with a CNAME and an address, so that a
// name the handler wrongly forwards gets an answer the agent could use. It records what it was
// asked.
type answerAll struct {
	mu    sync.Mutex
	asked []string
}

func (u *answerAll) exchange(_ context.Context, name string, qtype uint16) (*dns.Msg, error) {
	u.mu.Lock()
	u.asked = append(u.asked, dns.TypeToString[qtype]+" "+name)
	u.mu.Unlock()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.Response = true
	hdr := func(owner string, t uint16) dns.RR_Header {
		return dns.RR_Header{Name: owner, Rrtype: t, Class: dns.ClassINET, Ttl: 60}
	}
	m.Answer = []dns.RR{
		&dns.CNAME{Hdr: hdr(dns.Fqdn(name), dns.TypeCNAME), Target: "edge.example.net."},
		&dns.A{Hdr: hdr("edge.example.net.", dns.TypeA), A: net.IPv4(192, 0, 2, 7)},
	}
	return m, nil
}

// captureWriter is a dns.ResponseWriter that keeps the reply.
type captureWriter struct {
	remote net.Addr
	reply  *dns.Msg
}

func (w *captureWriter) LocalAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
}
func (w *captureWriter) RemoteAddr() net.Addr        { return w.remote }
func (w *captureWriter) WriteMsg(m *dns.Msg) error   { w.reply = m; return nil }
func (w *captureWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *captureWriter) Close() error                { return nil }
func (w *captureWriter) TsigStatus() error           { return nil }
func (w *captureWriter) TsigTimersOnly(bool)         {}
func (w *captureWriter) Hijack()                     {}

// query packs one question for the seed corpus.
func query(name string, qtype uint16, edit ...func(*dns.Msg)) []byte {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	for _, e := range edit {
		e(m)
	}
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzDNSHandler sends random wire bytes, and random names and types, through netd's DNS handler
// with an upstream that answers everything. It must never panic, never answer a name the list
// does not allow, never ask upstream for one (nor for anything but A), never open a port the
// list does not give the name, and log every query it answers exactly once.
func FuzzDNSHandler(f *testing.F) {
	edns := func(m *dns.Msg) { m.SetEdns0(4096, false) }
	for _, s := range []struct {
		wire  []byte
		name  string
		qtype uint16
	}{
		{query("api.example.com.", dns.TypeA), "api.example.com.", dns.TypeA},
		{query("a.b.example.org.", dns.TypeA, edns), "API.Example.COM", dns.TypeAAAA},
		{query("git.example.com.", dns.TypeA), "git.example.com", dns.TypeA},
		{query("web.example.com.", dns.TypeTXT), "x.api.example.com.", dns.TypeA},
		{query("example.org.", dns.TypeA), "api.example.com.evil.net.", dns.TypeA},
		{query(`api\.example.com.`, dns.TypeA), `a\000b.example.org.`, dns.TypeA},
		{query("evil.example.com.", dns.TypeANY), "192.0.2.1.", dns.TypeA},
		{query("api.example.com.", dns.TypeA, func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate }), "", dns.TypeA},
		{query("api.example.com.", dns.TypeA, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), ".", dns.TypeA},
		{query("api.example.com.", dns.TypeA, func(m *dns.Msg) {
			m.Question = append(m.Question, dns.Question{Name: "evil.example.com.", Qtype: dns.TypeA, Qclass: dns.ClassINET})
		}), "api.example.com..", dns.TypeA},
		{[]byte("\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01\x00\x01"), strings.Repeat("a.", 130) + "example.org.", dns.TypeA},
		{nil, strings.Repeat("a", 64) + ".example.org.", 0},
	} {
		f.Add(s.wire, s.name, s.qtype)
	}
	f.Fuzz(func(t *testing.T, wire []byte, name string, qtype uint16) {
		var m dns.Msg
		if len(wire) >= 12 && acceptQuery(dns.Header{Bits: uint16(wire[2])<<8 | uint16(wire[3])}) == dns.MsgAccept && m.Unpack(wire) == nil {
			checkDNSHandler(t, &m, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000})
		}
		q := new(dns.Msg)
		q.SetQuestion(name, qtype)
		checkDNSHandler(t, q, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001})
	})
}

// checkDNSHandler serves one query with a fresh handler and checks its reply, what it asked
// upstream, the ports it opened and its log.
func checkDNSHandler(t *testing.T, r *dns.Msg, remote net.Addr) {
	t.Helper()
	cfg := testConfig(t, fuzzEgress, nil, "")
	list := cfg.get().list
	up, sets, log := &answerAll{}, &fakeSets{}, &syncBuffer{}
	h := &dnsHandler{cfg: cfg, res: up, sets: sets, log: newJSONL(log, maxLogBytes), now: time.Now}
	w := &captureWriter{remote: remote}
	h.ServeDNS(w, r)

	if w.reply == nil {
		t.Fatalf("no reply to %v", r.Question)
	}
	allowedA := r.Opcode == dns.OpcodeQuery && len(r.Question) == 1 && r.Question[0].Qclass == dns.ClassINET &&
		r.Question[0].Qtype == dns.TypeA && list.AllowsName(r.Question[0].Name)
	if len(w.reply.Answer) > 0 && !allowedA {
		t.Fatalf("answered %v for %v, which the list does not allow", w.reply.Answer, r.Question)
	}
	for _, a := range up.asked {
		qt, qname, _ := strings.Cut(a, " ")
		if qt != "A" || !list.AllowsName(qname) || !allowedA || !strings.EqualFold(qname+".", dns.Fqdn(strings.TrimSuffix(r.Question[0].Name, "."))) {
			t.Fatalf("asked upstream %q for %v", a, r.Question)
		}
	}
	for _, req := range sets.requests() {
		for _, p := range req.Ports {
			if p == 443 || p == 80 || !list.Allows(req.Name, p) || !allowedA {
				t.Fatalf("opened %+v for %v", req, r.Question)
			}
		}
	}
	recs := logRecords[policy.DNSRecord](t, log)
	if len(recs) != 1 {
		t.Fatalf("%d log records for one query, want 1:\n%s", len(recs), log)
	}
	if v := recs[0].Verdict; !slices.Contains([]string{policy.Allowed, policy.Denied, policy.Error}, v) ||
		v == policy.Allowed && !(len(r.Question) == 1 && list.AllowsName(r.Question[0].Name)) {
		t.Fatalf("logged %+v for %v", recs[0], r.Question)
	}
}
