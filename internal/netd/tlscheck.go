package netd

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// checkTLS answers the supervisor's question about a held TLS flow ("The TLS fast path"): it
// reads the ClientHello the supervisor assembled and decides on its server name exactly as the
// SNI proxy decides on a connection it accepted, logs the decision, and sends the verdict.
func (c *child) checkTLS(m message) {
	rec, name, err := c.sni.decideHeld(m.Flow, m.Hello)
	c.sni.log.write(rec)
	answer := message{Op: opTLSVerdict, ID: m.ID, Name: name}
	if err != nil {
		answer.Name, answer.Error = "", err.Error()
	}
	c.ctl.send(answer)
}

// decideHeld decides on the hello of a held flow, "agent-addr:port server-addr:port", and
// returns the record to log and the canonical name it is allowed for, or why not.
func (p *sniProxy) decideHeld(flow string, hello []byte) (policy.ConnRecord, string, error) {
	start := p.now()
	rec := policy.ConnRecord{TS: policy.Timestamp(start), Kind: policy.KindTLS, Port: 443, Kernel: true, BytesUp: int64(len(hello))}
	_, dst, ok := strings.Cut(flow, " ")
	server, err := netip.ParseAddrPort(dst)
	if !ok || err != nil || server.Port() != 443 {
		rec.Verdict, rec.Reason = policy.Error, "unreadable flow from the supervisor"
		return rec, "", errors.New(rec.Reason)
	}
	rec.OrigDst = server.String()
	_, name, err := p.readDecision(bytes.NewReader(hello), &rec)
	rec.DurMS = since(start)
	if err != nil {
		var r *refusal
		if !errors.As(err, &r) {
			r = &refusal{policy.Error, err.Error()}
		}
		rec.Verdict, rec.Reason = r.verdict, r.reason
		return rec, "", err
	}
	rec.Verdict, rec.Upstream = policy.Allowed, server.String()
	return rec, name, nil
}

// heldRefusal is the record of a held flow the supervisor's gate refused itself: the address
// the agent aimed at, when the flow could be read, and why.
func heldRefusal(flow, why string, now time.Time) policy.ConnRecord {
	rec := policy.ConnRecord{TS: policy.Timestamp(now), Kind: policy.KindTLS, Port: 443, Kernel: true, Verdict: policy.Denied, Reason: why}
	if len(rec.Reason) > 300 {
		rec.Reason = rec.Reason[:300]
	}
	if _, dst, ok := strings.Cut(flow, " "); ok {
		if server, err := netip.ParseAddrPort(dst); err == nil {
			rec.OrigDst = server.String()
		}
	}
	return rec
}
