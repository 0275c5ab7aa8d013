package netd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/miekg/dns"
)

// dnsHandler is the only resolver the agent can reach: every uid's port-53 traffic is redirected
// to it. It answers NXDOMAIN for every name the allowlist does not cover, so a denied name does
// not even resolve, and forwards only A questions for allowed names. Names are decided by
// [egress.List], the same matching the proxies and the ruleset use.
type dnsHandler struct {
	cfg  *current
	res  exchanger
	sets setAdder
	log  *jsonl
	now  func() time.Time
	// lookups are the upstream lookups in flight ([maxDNSLookups]); nil bounds none.
	lookups chan struct{}
	// allowed decides which answered addresses may be opened on the name's non-TLS ports; nil
	// allows all. netd's is [destinationCheck].
	allowed func(netip.Addr) error
}

// exchanger asks the upstream resolver one question for a canonical name: [resolver] in netd,
// a fake in tests.
type exchanger interface {
	exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error)
}

// ServeDNS answers one query and logs it.
func (h *dnsHandler) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*dnsTimeout)
	defer cancel()
	m, rec := h.answer(ctx, r)
	fitResponse(m, r, w.RemoteAddr())
	w.WriteMsg(m)
	rec.TS = policy.Timestamp(h.now())
	rec.RCode = rcodeName(m.Rcode)
	h.log.write(rec)
}

// answer decides a query and builds its reply and log record.
func (h *dnsHandler) answer(ctx context.Context, r *dns.Msg) (*dns.Msg, policy.DNSRecord) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	if r.Opcode != dns.OpcodeQuery {
		m.Rcode = dns.RcodeNotImplemented
		return m, policy.DNSRecord{Verdict: policy.Denied, Reason: "opcode " + dns.OpcodeToString[r.Opcode]}
	}
	if len(r.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		return m, policy.DNSRecord{Verdict: policy.Denied, Reason: fmt.Sprintf("%d questions", len(r.Question))}
	}
	q := r.Question[0]
	rec := policy.DNSRecord{Name: logName(q.Name), Type: typeName(q.Qtype), Verdict: policy.Denied}
	name, ok := egress.NormalizeName(q.Name)
	ports := h.cfg.get().list.Ports(name)
	switch {
	case q.Qclass != dns.ClassINET:
		m.Rcode, rec.Reason = dns.RcodeRefused, "class "+dns.ClassToString[q.Qclass]
	case !ok:
		m.Rcode, rec.Reason = dns.RcodeNameError, "invalid name"
	case len(ports) == 0:
		m.Rcode, rec.Reason = dns.RcodeNameError, "not allowed"
	case q.Qtype != dns.TypeA:
		rec.Verdict, rec.Reason = policy.Allowed, "only A is forwarded"
	case !h.lookup():
		m.Rcode, rec.Verdict, rec.Reason = dns.RcodeServerFailure, policy.Error, reasonTooManyLookups
	default:
		defer h.lookupDone()
		rec = h.forward(ctx, m, q, name, ports, rec)
	}
	return m, rec
}

// maxDNSLookups bounds the upstream lookups the resolver has in flight. Every datagram the agent
// sends gets a goroutine of its own, and a lookup of an allowed name holds it, a socket and the
// query for as long as upstream takes — 0.8 s and more for a name Docker's resolver does not
// answer at once. A flood of 20,000 queries a second for such a name took netd's child past its
// memory limit in seconds; past the bound a query is answered SERVFAIL at once, and logged.
const maxDNSLookups = 256

// reasonTooManyLookups is the log's reason for a query answered SERVFAIL at [maxDNSLookups].
const reasonTooManyLookups = "too many lookups in flight"

// lookup takes a place for an upstream lookup, without waiting; false when none is free.
func (h *dnsHandler) lookup() bool {
	if h.lookups == nil {
		return true
	}
	select {
	case h.lookups <- struct{}{}:
		return true
	default:
		return false
	}
}

func (h *dnsHandler) lookupDone() {
	if h.lookups != nil {
		<-h.lookups
	}
}

// forward answers an allowed A question from upstream. Before answering, it opens the
// addresses on the name's non-TLS, non-HTTP ports, which the agent reaches directly, and, with
// the TLS fast path on, on 443 in policy.SetTLS, where the agent's flows are held for their
// server name.
func (h *dnsHandler) forward(ctx context.Context, m *dns.Msg, q dns.Question, name string, ports []int, rec policy.DNSRecord) policy.DNSRecord {
	in, err := h.res.exchange(ctx, name, dns.TypeA)
	if err != nil {
		m.Rcode = dns.RcodeServerFailure
		rec.Verdict, rec.Reason = policy.Error, err.Error()
		return rec
	}
	rec.Verdict = policy.Allowed
	m.Rcode = in.Rcode
	for _, rr := range in.Answer {
		if t := rr.Header().Rrtype; t != dns.TypeA && t != dns.TypeCNAME {
			continue
		}
		if strings.EqualFold(rr.Header().Name, q.Name) {
			rr.Header().Name = q.Name // echo the client's spelling (0x20 randomisation)
		}
		m.Answer = append(m.Answer, rr)
		rec.Answers = append(rec.Answers, answerText(rr))
	}
	addrs, ttl := answerA(m.Answer)
	rec.TTL = uint32(ttl / time.Second)
	direct := slices.DeleteFunc(slices.Clone(ports), func(p int) bool { return p == 443 || p == 80 })
	tls := slices.Contains(ports, 443) && h.cfg.get().tlsFast
	if (len(direct) > 0 || tls) && h.allowed != nil {
		addrs = slices.DeleteFunc(addrs, func(a netip.Addr) bool {
			if err := h.allowed(a); err != nil {
				rec.Reason = "not opened: " + err.Error()
				return true
			}
			return false
		})
	}
	if len(direct) > 0 && len(addrs) > 0 {
		err := h.sets.addElements(ctx, setRequest{
			Set:     policy.SetAgent,
			Name:    name,
			Addrs:   addrs[:min(len(addrs), maxReqAddrs)],
			Ports:   direct[:min(len(direct), maxReqPorts)],
			Timeout: clampTTL(ttl, minElemTimeout, maxElemTimeout),
		})
		if err != nil {
			rec.Verdict, rec.Reason = policy.Error, "opening ports: "+err.Error()
		}
	}
	if tls && len(addrs) > 0 {
		err := h.sets.addElements(ctx, setRequest{
			Set:     policy.SetTLS,
			Name:    name,
			Addrs:   addrs[:min(len(addrs), maxReqAddrs)],
			Ports:   []int{443},
			Timeout: clampTTL(ttl, minElemTimeout, maxElemTimeout),
		})
		if err != nil && rec.Verdict != policy.Error {
			// The answer stands: the agent's connections to these addresses go through the SNI
			// proxy instead, as they do for an address netd never opened.
			rec.Reason = "tls fast path not opened: " + err.Error()
		}
	}
	return rec
}

// fitResponse adds EDNS0 to the reply when the query had it, and truncates a UDP reply to what
// the client can take.
func fitResponse(m, r *dns.Msg, remote net.Addr) {
	size := dns.MinMsgSize
	if opt := r.IsEdns0(); opt != nil {
		size = min(max(int(opt.UDPSize()), dns.MinMsgSize), 4096)
		m.SetEdns0(uint16(size), false)
	}
	if _, isUDP := remote.(*net.UDPAddr); isUDP {
		m.Truncate(size)
	}
}

// logName is a question name as logged: lower-cased, escaped as DNS presentation format does,
// and bounded.
func logName(name string) string {
	name = strings.ToLower(name)
	if len(name) > 300 {
		name = name[:300] + "…"
	}
	return name
}

func typeName(t uint16) string {
	if s, ok := dns.TypeToString[t]; ok {
		return s
	}
	return fmt.Sprintf("TYPE%d", t)
}

func rcodeName(c int) string {
	if s, ok := dns.RcodeToString[c]; ok {
		return s
	}
	return fmt.Sprintf("RCODE%d", c)
}

// answerText renders an answer record for the log: "A 192.0.2.1", "CNAME cdn.example.net.".
func answerText(rr dns.RR) string {
	switch v := rr.(type) {
	case *dns.A:
		a, _ := netip.AddrFromSlice(v.A.To4())
		return "A " + a.String()
	case *dns.CNAME:
		return "CNAME " + v.Target
	}
	return typeName(rr.Header().Rrtype)
}

// acceptQuery lets every query through to [dnsHandler], which answers malformed ones itself and
// logs them; responses are ignored so netd cannot be used to reflect them.
func acceptQuery(dh dns.Header) dns.MsgAcceptAction {
	const qrBit = 1 << 15
	if dh.Bits&qrBit != 0 {
		return dns.MsgIgnore
	}
	return dns.MsgAccept
}

// dnsServers returns the UDP and TCP servers of h on the given listeners.
func dnsServers(h dns.Handler, pc net.PacketConn, ln net.Listener) (udp, tcp *dns.Server) {
	udp = &dns.Server{PacketConn: pc, Handler: h, MsgAcceptFunc: acceptQuery}
	tcp = &dns.Server{Listener: ln, Handler: h, MsgAcceptFunc: acceptQuery,
		ReadTimeout: 5 * time.Second, IdleTimeout: func() time.Duration { return 10 * time.Second }}
	return udp, tcp
}
