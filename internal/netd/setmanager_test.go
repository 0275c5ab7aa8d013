package netd

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// testRules derives set rules from a policy with the given egress entries and an MCP gateway on
// port 8811.
func testRules(t *testing.T, egress ...string) setRules {
	t.Helper()
	p := &policy.Netd{Version: policy.Version, Egress: egress, MCP: &policy.MCP{Upstream: "http://abox-gw-dev:8811/mcp"}}
	r, err := rulesFromPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSetManagerRevokes(t *testing.T) {
	ctx := context.Background()
	nft := &fakeNFT{}
	m := newSetManager(nft)
	m.setRules(ctx, testRules(t, "git.example.com:22", "mirror.example.com:22", "*.db.example.com:5432", "api.example.com"))
	for _, r := range []setRequest{
		{Set: policy.SetAgent, Name: "git.example.com", Addrs: addrs("192.0.2.2", "192.0.2.1"), Ports: []int{22}, Timeout: 60},
		{Set: policy.SetAgent, Name: "git.example.com", Addrs: addrs("192.0.2.9"), Ports: []int{22}, Timeout: 60},
		{Set: policy.SetAgent, Name: "mirror.example.com", Addrs: addrs("192.0.2.9"), Ports: []int{22}, Timeout: 60},
		{Set: policy.SetAgent, Name: "a.db.example.com", Addrs: addrs("192.0.2.3"), Ports: []int{5432}, Timeout: 60},
		{Set: policy.SetNetd, Name: "api.example.com", Addrs: addrs("192.0.2.4"), Ports: []int{443}, Timeout: 60},
	} {
		if err := m.add(ctx, r); err != nil {
			t.Fatalf("add %+v: %v", r, err)
		}
	}
	before := len(nft.batches())

	// git.example.com goes: its own addresses are closed, the one mirror.example.com shares stays.
	if err := m.setRules(ctx, testRules(t, "mirror.example.com:22", "*.db.example.com:5432")); err != nil {
		t.Fatal(err)
	}
	b := nft.batches()[before:]
	want := "add element inet abox agent_dst { 192.0.2.1 . 22 timeout 1s, 192.0.2.2 . 22 timeout 1s }\n" +
		"delete element inet abox agent_dst { 192.0.2.1 . 22, 192.0.2.2 . 22 }\n" +
		// …and moved, in the same transaction, to the set whose established flows are reset.
		"add element inet abox revoked_dst { 192.0.2.1 . 22 timeout 1s, 192.0.2.2 . 22 timeout 1s }\n" +
		"delete element inet abox revoked_dst { 192.0.2.1 . 22, 192.0.2.2 . 22 }\n" +
		"add element inet abox revoked_dst { 192.0.2.1 . 22 timeout 86400s, 192.0.2.2 . 22 timeout 86400s }\n"
	if len(b) != 1 || b[0] != want {
		t.Fatalf("revoking batches = %q\nwant %q", b, want)
	}
	// A request checked against the old rules cannot land now.
	late := setRequest{Set: policy.SetAgent, Name: "git.example.com", Addrs: addrs("192.0.2.1"), Ports: []int{22}, Timeout: 60}
	if err := m.add(ctx, late); !errors.Is(err, errRefused) {
		t.Errorf("add for a removed name = %v, want a refusal", err)
	}
	// Unchanged rules revoke nothing; once mirror.example.com goes too, the shared address goes.
	m.setRules(ctx, testRules(t, "mirror.example.com:22", "*.db.example.com:5432"))
	if n := len(nft.batches()) - before; n != 1 {
		t.Errorf("unchanged rules ran %d more batches", n-1)
	}
	m.setRules(ctx, testRules(t, "*.db.example.com:5432"))
	b = nft.batches()[before:]
	if len(b) != 2 || !strings.Contains(b[1], "delete element inet abox agent_dst { 192.0.2.9 . 22 }") {
		t.Errorf("batches = %q, want the shared address revoked", b)
	}
	// The wildcard's element and netd's own never were.
	for _, c := range nft.batches()[before:] {
		if strings.Contains(c, "192.0.2.3") || strings.Contains(c, "192.0.2.4") {
			t.Errorf("revoked an element still allowed, or netd's own: %q", c)
		}
	}
}

func TestSetManagerRevokeFallsBackToFlush(t *testing.T) {
	ctx := context.Background()
	nft := &fakeNFT{}
	m := newSetManager(nft)
	m.setRules(ctx, testRules(t, "git.example.com:22", "db.example.com:5432"))
	db := setRequest{Set: policy.SetAgent, Name: "db.example.com", Addrs: addrs("192.0.2.3"), Ports: []int{5432}, Timeout: 60}
	m.add(ctx, setRequest{Set: policy.SetAgent, Name: "git.example.com", Addrs: addrs("192.0.2.1"), Ports: []int{22}, Timeout: 60})
	m.add(ctx, db)
	nft.batchErr, nft.failIf = errFake, "delete element inet abox agent_dst" // the precise removal fails
	err := m.setRules(ctx, testRules(t, "db.example.com:5432"))
	if err == nil || !strings.Contains(err.Error(), "flushed them instead") {
		t.Errorf("setRules with a failing batch = %v, want the flush reported", err)
	}
	if c := nft.calls[len(nft.calls)-1]; !strings.HasPrefix(c, "-f -\nflush set inet abox agent_dst\nflush set inet abox tls_dst\n") ||
		!strings.Contains(c, "add element inet abox revoked_dst { 192.0.2.1 . 22 timeout 86400s, 192.0.2.3 . 5432 timeout 86400s }") {
		t.Errorf("last nft call = %q, want the flush with every element revoked", c)
	}
	// The flush forgot every element, so the still-allowed one is opened again on request.
	nft.batchErr, nft.failIf = nil, ""
	n := len(nft.batches())
	if err := m.add(ctx, db); err != nil || len(nft.batches()) != n+1 {
		t.Errorf("add after the flush = %v with %d new batches, want the element added again", err, len(nft.batches())-n)
	}
}

func TestSetManagerRemembersBoundedNames(t *testing.T) {
	m := newSetManager(&fakeNFT{})
	m.now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	var entries []string
	for i := range maxElemNames + 4 {
		entries = append(entries, "h"+string(rune('a'+i))+".example.com:22")
	}
	m.setRules(context.Background(), testRules(t, entries...))
	for _, e := range entries {
		name := strings.TrimSuffix(e, ":22")
		m.add(context.Background(), setRequest{Set: policy.SetAgent, Name: name, Addrs: addrs("192.0.2.1"), Ports: []int{22}, Timeout: 60})
	}
	st := m.elems[elemKey{policy.SetAgent, addrs("192.0.2.1")[0], 22}]
	if len(st.names) != maxElemNames || st.names[len(st.names)-1] != "h"+string(rune('a'+maxElemNames+3))+".example.com" {
		t.Errorf("names = %v, want the last %d", st.names, maxElemNames)
	}
}

// TestSetManagerTLSSet: the TLS set takes only 443, for a canonical name allowed on 443; its
// elements are revoked with their name like the agent set's, and the revocation resets the
// flows established to them (revoked_dst) in the same transaction. revokeFlows puts flows in
// revoked_flow.
func TestSetManagerTLSSet(t *testing.T) {
	ctx := context.Background()
	nft := &fakeNFT{}
	m := newSetManager(nft)
	m.setRules(ctx, testRules(t, "api.example.com", "git.example.com:22"))
	for _, r := range []setRequest{
		{Set: policy.SetTLS, Name: "git.example.com", Addrs: addrs("192.0.2.5"), Ports: []int{443}, Timeout: 60},
		{Set: policy.SetTLS, Name: "api.example.com", Addrs: addrs("192.0.2.6"), Ports: []int{22}, Timeout: 60},
		{Set: policy.SetTLS, Name: "API.example.com", Addrs: addrs("192.0.2.6"), Ports: []int{443}, Timeout: 60},
	} {
		if err := m.add(ctx, r); !errors.Is(err, errRefused) {
			t.Errorf("add %+v = %v, want a refusal", r, err)
		}
	}
	if err := m.add(ctx, setRequest{Set: policy.SetTLS, Name: "api.example.com", Addrs: addrs("192.0.2.6"), Ports: []int{443}, Timeout: 60}); err != nil {
		t.Fatal(err)
	}
	before := len(nft.batches())
	m.setRules(ctx, testRules(t, "git.example.com:22"))
	b := nft.batches()[before:]
	if len(b) != 1 || !strings.Contains(b[0], "delete element inet abox tls_dst { 192.0.2.6 . 443 }") ||
		!strings.Contains(b[0], "add element inet abox revoked_dst { 192.0.2.6 . 443 timeout 86400s }") {
		t.Errorf("revoking batches = %q, want the TLS element deleted and revoked", b)
	}
	flow := flowKey{netip.MustParseAddrPort("172.30.0.2:40000"), netip.MustParseAddrPort("192.0.2.7:443")}
	if err := m.revokeFlows(ctx, []flowKey{flow}); err != nil {
		t.Fatal(err)
	}
	if b := nft.batches(); !strings.Contains(b[len(b)-1], "add element inet abox revoked_flow { 172.30.0.2 . 40000 . 192.0.2.7 . 443 timeout 86400s }") {
		t.Errorf("last batch = %q, want the flow in revoked_flow", b[len(b)-1])
	}
}
