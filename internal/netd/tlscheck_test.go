package netd

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// TestDecideHeld: the child decides on a held flow's hello as the SNI proxy decides on a
// connection: an allowed name is allowed (to the address the agent aimed at, logged as carried by
// the kernel), anything else refused with the proxy's reason (an allowed outer name with an
// encrypted ClientHello too), and a flow it cannot read refused.
func TestDecideHeld(t *testing.T) {
	var log bytes.Buffer
	p := &sniProxy{cfg: testConfig(t, []string{"exact.test", "ssh.test:22"}, nil, ""), log: newJSONL(&log, 1<<20), now: time.Now}
	const flow = "172.30.0.2:40000 192.0.2.10:443"
	list, _ := echKey(t, "exact.test")
	for _, tc := range []struct {
		name, flow string
		hello      []byte
		allowed    string
		verdict    string
		reason     string
	}{
		{"allowed", flow, realHello(t, "exact.test"), "exact.test", policy.Allowed, ""},
		{"case folded", flow, realHello(t, "EXACT.test"), "exact.test", policy.Allowed, ""},
		{"not allowed", flow, realHello(t, "other.test"), "", policy.Denied, "not allowed"},
		{"other port", flow, realHello(t, "ssh.test"), "", policy.Denied, "allowed only on port 22"},
		{"no sni", flow, realHello(t, ""), "", policy.Denied, "no sni"},
		{"not tls", flow, []byte("GET / HTTP/1.1\r\n\r\n"), "", policy.Denied, "not a tls handshake"},
		{"encrypted client hello", flow, echHello(t, list, "secret.test"), "", policy.Denied, policy.ReasonECH},
		{"flow unreadable", "garbage", realHello(t, "exact.test"), "", policy.Error, "unreadable flow"},
		{"flow not 443", "172.30.0.2:40000 192.0.2.10:8443", realHello(t, "exact.test"), "", policy.Error, "unreadable flow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, name, err := p.decideHeld(tc.flow, tc.hello)
			if name != tc.allowed || (err == nil) != (tc.allowed != "") {
				t.Errorf("decideHeld = %q, %v; want %q", name, err, tc.allowed)
			}
			if rec.Verdict != tc.verdict || !strings.Contains(rec.Reason, tc.reason) || !rec.Kernel {
				t.Errorf("record %+v, want verdict %s, reason %q, kernel", rec, tc.verdict, tc.reason)
			}
			if tc.allowed != "" && (rec.Upstream != "192.0.2.10:443" || rec.OrigDst != "192.0.2.10:443") {
				t.Errorf("record %+v, want the agent's address as origin and upstream", rec)
			}
		})
	}
}

// TestAskChildChecksTheAnswer: the supervisor takes an allowed answer only for a canonical name
// its own policy allows on 443; a refusal, a name it does not allow (a child lying, or
// compromised) and no answer at all are refusals.
func TestAskChildChecksTheAnswer(t *testing.T) {
	s := &supervisor{sets: newSetManager(&fakeNFT{}), answers: newPendingAnswers()}
	s.sets.setRules(context.Background(), testRules(t, "exact.test", "ssh.test:22"))
	mine, theirs := net.Pipe()
	rc := &runningChild{ctl: newCtlConn(mine)}
	child := newCtlConn(theirs)
	answers := make(chan message, 1)
	go func() {
		for {
			m, err := child.recv()
			if err != nil {
				return
			}
			a := <-answers
			a.ID = m.ID
			child.send(a)
		}
	}()
	go func() {
		for {
			m, err := rc.ctl.recv()
			if err != nil {
				return
			}
			s.answers.resolve(m)
		}
	}()
	ask := s.askChild(rc)
	for _, tc := range []struct {
		name   string
		answer message
		ok     bool
	}{
		{"allowed", message{Op: opTLSVerdict, Name: "exact.test"}, true},
		{"refused", message{Op: opTLSVerdict, Error: "not allowed"}, false},
		{"a name not allowed", message{Op: opTLSVerdict, Name: "evil.test"}, false},
		{"a name allowed elsewhere only", message{Op: opTLSVerdict, Name: "ssh.test"}, false},
		{"not canonical", message{Op: opTLSVerdict, Name: "EXACT.test."}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers <- tc.answer
			a := ask(context.Background(), tlsQuestion{flow: flowKey{agentEnd, serverEnd}, hello: []byte{22}})
			if (a.err == nil) != tc.ok || (tc.ok && a.name != tc.answer.Name) {
				t.Errorf("ask = %+v, want ok %v", a, tc.ok)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if a := ask(ctx, tlsQuestion{flow: flowKey{agentEnd, serverEnd}}); a.err == nil {
		t.Errorf("ask with no answer = %+v, want a refusal", a)
	}
	mine.Close()
	theirs.Close()
}
