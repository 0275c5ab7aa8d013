package netd

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func TestSetRequestValidate(t *testing.T) {
	p := &policy.Netd{Version: policy.Version, Egress: []string{"api.example.com", "git.example.com:22", "web.example.com:80", "db.example.com:5432"},
		MCP: &policy.MCP{Upstream: "http://abox-gw-dev:8811/mcp"}}
	rules, err := rulesFromPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	ok := setRequest{Set: policy.SetAgent, Name: "git.example.com", Addrs: addrs("192.0.2.1"), Ports: []int{22}, Timeout: 300}
	many := make([]netip.Addr, maxReqAddrs+1)
	for i := range many {
		many[i] = netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
	}
	tests := []struct {
		name    string
		mutate  func(*setRequest)
		wantErr string
	}{
		{"valid agent request", func(*setRequest) {}, ""},
		{"a port of another name", func(r *setRequest) { r.Ports = []int{22, 5432} }, "git.example.com is not allowed on port 5432"},
		{"no name", func(r *setRequest) { r.Name = "" }, "not a canonical host name"},
		{"name not allowed", func(r *setRequest) { r.Name = "evil.example.com" }, "evil.example.com is not allowed on port 22"},
		{"name not canonical", func(r *setRequest) { r.Name = "Git.example.com." }, "not a canonical host name"},
		{"netd set needs no name", func(r *setRequest) { r.Set, r.Name, r.Ports = policy.SetNetd, "", []int{443} }, ""},
		{"netd to 443", func(r *setRequest) { r.Set, r.Ports = policy.SetNetd, []int{443} }, ""},
		// The supervisor opens the gateway's address itself; no request of the child can.
		{"netd to the gateway's port", func(r *setRequest) { r.Set, r.Ports = policy.SetNetd, []int{8811} }, "port 8811 is not allowed in set netd_dst"},
		{"private address", func(r *setRequest) { r.Addrs = addrs("172.18.0.5") }, ""},
		{"unknown set", func(r *setRequest) { r.Set = "output" }, "unknown set"},
		{"injection in set name", func(r *setRequest) { r.Set = "agent_dst { 0.0.0.0/0 }" }, "unknown set"},
		{"port not in the policy", func(r *setRequest) { r.Ports = []int{25} }, "port 25 is not allowed"},
		{"443 in the agent set", func(r *setRequest) { r.Ports = []int{443} }, "port 443 is not allowed in set agent_dst"},
		{"netd to port 22", func(r *setRequest) { r.Set = policy.SetNetd }, "port 22 is not allowed in set netd_dst"},
		{"port 0", func(r *setRequest) { r.Ports = []int{0} }, "outside 1–65535"},
		{"port 65536", func(r *setRequest) { r.Ports = []int{65536} }, "outside 1–65535"},
		{"no ports", func(r *setRequest) { r.Ports = nil }, "0 ports"},
		{"no addresses", func(r *setRequest) { r.Addrs = nil }, "0 addresses"},
		{"too many addresses", func(r *setRequest) { r.Addrs = many }, "33 addresses"},
		{"timeout 0", func(r *setRequest) { r.Timeout = 0 }, "timeout 0"},
		{"timeout over a day", func(r *setRequest) { r.Timeout = 86401 }, "timeout 86401"},
		{"docker dns", func(r *setRequest) { r.Addrs = addrs("127.0.0.11") }, "not a unicast destination"},
		{"loopback", func(r *setRequest) { r.Addrs = addrs("127.0.0.1") }, "not a unicast destination"},
		{"metadata service", func(r *setRequest) { r.Addrs = addrs("169.254.169.254") }, "not a unicast destination"},
		{"unspecified", func(r *setRequest) { r.Addrs = addrs("0.0.0.0") }, "not a unicast destination"},
		{"this network", func(r *setRequest) { r.Addrs = addrs("0.1.2.3") }, "not a unicast destination"},
		{"broadcast", func(r *setRequest) { r.Addrs = addrs("255.255.255.255") }, "not a unicast destination"},
		{"multicast", func(r *setRequest) { r.Addrs = addrs("224.0.0.1") }, "not a unicast destination"},
		{"class e", func(r *setRequest) { r.Addrs = addrs("240.0.0.1") }, "not a unicast destination"},
		{"ipv6", func(r *setRequest) { r.Addrs = addrs("2001:db8::1") }, "not IPv4"},
		{"ipv4-mapped ipv6", func(r *setRequest) { r.Addrs = addrs("::ffff:192.0.2.1") }, "not IPv4"},
		{"zero address value", func(r *setRequest) { r.Addrs = []netip.Addr{{}} }, "not IPv4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			r.Addrs = append([]netip.Addr(nil), ok.Addrs...)
			tc.mutate(&r)
			err := r.validate(rules)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("validate = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestRulesFromPolicyWithoutMCP(t *testing.T) {
	p := &policy.Netd{Version: policy.Version, Egress: []string{"a.example.com", "*.b.example.com"}, DefaultPorts: []int{443, 8443}}
	rules, err := rulesFromPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	ports := rules.ports
	if !ports[policy.SetAgent][8443] || ports[policy.SetAgent][443] || !ports[policy.SetNetd][443] || ports[policy.SetNetd][80] {
		t.Errorf("ports = %v, want agent {8443}, netd {443}", ports)
	}
	p.MCP = &policy.MCP{Upstream: "ftp://gw/"}
	if _, err := rulesFromPolicy(p); err == nil {
		t.Error("an ftp gateway URL was accepted")
	}
}

// fakeNFT records nft invocations and answers listings.
type fakeNFT struct {
	mu       sync.Mutex
	calls    []string // args, then stdin after a newline
	ruleset  []byte   // -j list ruleset
	table    []byte   // -j list table inet abox
	loadErr  error    // for -f <file>
	batchErr error    // for -f -
	failIf   string   // when set, batchErr only for batches holding this
	// tableDelay holds each listing of the table (the counters' read) this long.
	tableDelay time.Duration
}

func (f *fakeNFT) run(_ context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := strings.Join(args, " ")
	f.mu.Lock()
	delay := f.tableDelay
	f.mu.Unlock()
	if cmd == "-j list table inet abox" {
		time.Sleep(delay)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, cmd+"\n"+string(stdin))
	switch {
	case cmd == "-j list ruleset":
		return f.ruleset, nil
	case cmd == "-j list table inet abox":
		return f.table, nil
	case cmd == "-f -":
		if f.failIf != "" && !strings.Contains(string(stdin), f.failIf) {
			return nil, nil
		}
		return nil, f.batchErr
	case len(args) == 2 && args[0] == "-f":
		return nil, f.loadErr
	}
	return nil, nil
}

func (f *fakeNFT) batches() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, "-f -\n") {
			out = append(out, strings.TrimPrefix(c, "-f -\n"))
		}
	}
	return out
}

func TestSetManagerBatches(t *testing.T) {
	nft := &fakeNFT{}
	m := newSetManager(nft)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	m.setRules(context.Background(), testRules(t, "git.example.com:22"))
	req := setRequest{Set: policy.SetAgent, Name: "git.example.com", Addrs: addrs("192.0.2.1", "192.0.2.2"), Ports: []int{22}, Timeout: 300}
	if err := m.add(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := "add element inet abox agent_dst { 192.0.2.1 . 22 timeout 1s, 192.0.2.2 . 22 timeout 1s }\n" +
		"delete element inet abox agent_dst { 192.0.2.1 . 22, 192.0.2.2 . 22 }\n" +
		"add element inet abox agent_dst { 192.0.2.1 . 22 timeout 300s, 192.0.2.2 . 22 timeout 300s }\n"
	if b := nft.batches(); len(b) != 1 || b[0] != want {
		t.Fatalf("batches = %q\nwant %q", b, want)
	}
	now = now.Add(60 * time.Second) // 240 s left of 300: fresh enough
	m.add(context.Background(), req)
	if n := len(nft.batches()); n != 1 {
		t.Errorf("a fresh element was re-added (%d batches)", n)
	}
	now = now.Add(30 * time.Second) // 210 s left, under three quarters: refresh
	req.Addrs = addrs("192.0.2.1")
	m.add(context.Background(), req)
	if b := nft.batches(); len(b) != 2 || !strings.Contains(b[1], "192.0.2.1 . 22 timeout 300s") || strings.Contains(b[1], "192.0.2.2") {
		t.Errorf("refresh batches = %q, want one refreshing 192.0.2.1 only", b)
	}
	nft.batchErr = errFake
	req.Addrs = addrs("192.0.2.9")
	if err := m.add(context.Background(), req); err == nil || !strings.Contains(err.Error(), "fake failure") {
		t.Errorf("add with a failing nft = %v", err)
	}
	if err := m.add(context.Background(), req); err == nil {
		t.Error("a failed element was remembered as added")
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := dir + "/token"
		if err := writeAtomic(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := readSecret(dir+"/missing", "gateway token"); tok != "" || err != nil {
		t.Errorf("missing token file = %q, %v; want none, no error", tok, err)
	}
	if tok, err := readSecret(write("s3cret-token\n"), "gateway token"); tok != "s3cret-token" || err != nil {
		t.Errorf("token = %q, %v", tok, err)
	}
	for _, bad := range []string{"", "two words", "line\nline", "caf\u00e9", strings.Repeat("x", maxTokenLen+1)} {
		tok, err := readSecret(write(bad), "gateway token")
		if err == nil || tok != "" {
			t.Errorf("token %q accepted as %q", bad, tok)
			continue
		}
		if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error for a bad token quotes it: %v", err)
		}
	}
}

// TestRulesFromPolicyModelUpstream: the model upstream's port opens in netd's set only, even
// when no allowlist entry uses it, and the agent's set does not gain it.
func TestRulesFromPolicyModelUpstream(t *testing.T) {
	p := &policy.Netd{Version: policy.Version, Egress: []string{"a.example.com:22"}, DefaultPorts: []int{443},
		Model: &policy.ModelAPI{Upstream: "https://llm.example.com:8443/anthropic"}}
	rules, err := rulesFromPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	if !rules.ports[policy.SetNetd][8443] || rules.ports[policy.SetAgent][8443] {
		t.Errorf("ports = %v, want 8443 in netd's set only", rules.ports)
	}
	req := setRequest{Set: policy.SetAgent, Name: "llm.example.com", Addrs: []netip.Addr{netip.MustParseAddr("192.0.2.7")}, Ports: []int{8443}, Timeout: 30}
	if err := req.validate(rules); err == nil {
		t.Error("the agent's set accepted the model upstream")
	}
	p.Model.Upstream = "http://llm.example.com/"
	if _, err := rulesFromPolicy(p); err == nil {
		t.Error("a plain-http model upstream was accepted")
	}
}
