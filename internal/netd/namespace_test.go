package netd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

func TestCheckNamespace(t *testing.T) {
	tests := []struct {
		value   string // "" = no file
		wantErr string
	}{
		{"1024", ""},
		{"15080", ""}, // netd's lowest port: its child can still bind all of them
		{"0", "ip_unprivileged_port_start is 0"},
		{"53", "is 53"},
		{"1023", "is 1023"},
		{"15081", "is 15081"},
		{"", "needs --sysctl net.ipv4.ip_unprivileged_port_start=1024"},
		{"many", "not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			dir := t.TempDir()
			if tc.value != "" {
				writeSysctl(t, dir, tc.value)
			}
			err := checkNamespace(dir)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("checkNamespace = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("checkNamespace = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseGateway(t *testing.T) {
	for in, wantOK := range map[string]bool{
		"": true, "172.18.0.2:8811": true, "10.0.0.5:80": true,
		"127.0.0.1:8811": false, "127.0.0.11:53": false, "0.0.0.0:8811": false, "169.254.169.254:80": false,
		"224.0.0.1:8811": false, "[::1]:8811": false, "172.18.0.2:0": false, "abox-gw-dev:8811": false, "172.18.0.2": false,
	} {
		_, err := parseGateway(in)
		if (err == nil) != wantOK {
			t.Errorf("parseGateway(%q) = %v, want ok %v", in, err, wantOK)
		}
	}
}

// TestSetManagerBudgets: one name cannot hold more than maxPerName addresses in a set, and a
// set takes no more than maxLive elements on request however many names ask; expired elements
// free the budget. The supervisor's own openings count against neither.
func TestSetManagerBudgets(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := newSetManager(&fakeNFT{})
	m.now = func() time.Time { return now }
	m.setRules(ctx, testRules(t, "*.wild.example.com:22"))
	addrsFrom := func(base, n int) []netip.Addr {
		var out []netip.Addr
		for i := range n {
			out = append(out, netip.AddrFrom4([4]byte{10, byte((base + i) >> 16), byte((base + i) >> 8), byte(base + i)}))
		}
		return out
	}
	req := func(name string, as []netip.Addr) setRequest {
		return setRequest{Set: policy.SetAgent, Name: name, Addrs: as, Ports: []int{22}, Timeout: 60}
	}
	// One name: 32 + 32 addresses fit, the 65th does not; the same addresses again do.
	for i := range 2 {
		if err := m.add(ctx, req("a.wild.example.com", addrsFrom(i*32, 32))); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if err := m.add(ctx, req("a.wild.example.com", addrsFrom(64, 1))); !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "more than 64") {
		t.Errorf("the 65th address of one name = %v, want a refusal", err)
	}
	if err := m.add(ctx, req("a.wild.example.com", addrsFrom(0, 32))); err != nil {
		t.Errorf("refreshing addresses the name holds = %v", err)
	}
	// Many names: the set fills to maxLive and then refuses.
	n := 64
	for i := 0; n < maxLive; i++ {
		if err := m.add(ctx, req(fmt.Sprintf("n%d.wild.example.com", i), addrsFrom(1000+n, 32))); err != nil {
			t.Fatalf("filling the set at %d elements: %v", n, err)
		}
		n += 32
	}
	if err := m.add(ctx, req("late.wild.example.com", addrsFrom(900000, 1))); !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "budget") {
		t.Errorf("past maxLive = %v, want a refusal", err)
	}
	if err := m.openFixed(ctx, policy.SetNetd, addrsFrom(950000, 2), 53); err != nil {
		t.Errorf("the supervisor's own opening with the agent set full = %v", err)
	}
	// Once they expire, the budget is free again.
	now = now.Add(61 * time.Second)
	if err := m.add(ctx, req("late.wild.example.com", addrsFrom(900000, 1))); err != nil {
		t.Errorf("after expiry = %v", err)
	}
}

// TestSetManagerUnrevokes: a revoked pair that a still-allowed name resolves to again leaves the
// revoked set in the same transaction that reopens it, so its new connections are not reset.
func TestSetManagerUnrevokes(t *testing.T) {
	ctx := context.Background()
	nft := &fakeNFT{}
	m := newSetManager(nft)
	m.setRules(ctx, testRules(t, "old.example.com:22", "new.example.com:22"))
	a := addrs("192.0.2.5")
	m.add(ctx, setRequest{Set: policy.SetAgent, Name: "old.example.com", Addrs: a, Ports: []int{22}, Timeout: 60})
	m.setRules(ctx, testRules(t, "new.example.com:22"))
	if b := nft.batches(); !strings.Contains(b[len(b)-1], "add element inet abox revoked_dst { 192.0.2.5 . 22 timeout 86400s }") {
		t.Fatalf("revocation = %q", b[len(b)-1])
	}
	if err := m.add(ctx, setRequest{Set: policy.SetAgent, Name: "new.example.com", Addrs: a, Ports: []int{22}, Timeout: 60}); err != nil {
		t.Fatal(err)
	}
	b := nft.batches()
	last := b[len(b)-1]
	if !strings.Contains(last, "delete element inet abox revoked_dst { 192.0.2.5 . 22 }") ||
		!strings.Contains(last, "add element inet abox agent_dst { 192.0.2.5 . 22 timeout 60s }") {
		t.Errorf("reopening = %q, want it taken out of revoked_dst and added to agent_dst at once", last)
	}
}

// TestDialRefusesReservedDestinations: a name that resolves only to addresses netd must not
// connect to (loopback, where the agent listens; the gateway's; link-local) is not dialed and
// opens nothing; with an ordinary address among them, only that one is opened.
func TestDialRefusesReservedDestinations(t *testing.T) {
	cfg := testConfig(t, nil, nil, "", "172.18.0.2:8811")
	sets := &fakeSets{}
	d := &upstreamDialer{sets: sets, timeout: time.Second, allowed: destinationCheck(cfg, addrs("172.18.0.9")),
		res: fakeDNS{
			"evil.example.com":  addrs("127.0.0.1", "172.18.0.2", "169.254.169.254", "172.18.0.9"),
			"mixed.example.com": addrs("127.0.0.1", "192.0.2.50"),
		}}
	if c, err := d.dial(context.Background(), "evil.example.com", 443); err == nil || !strings.Contains(err.Error(), "no address netd may connect to") {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial = %v, want a refusal", err)
	}
	if len(sets.requests()) != 0 {
		t.Errorf("opened %v for a name with only reserved addresses", sets.requests())
	}
	sets.err = errFake // stops the dial before it connects: nothing leaves this machine
	if _, err := d.dial(context.Background(), "mixed.example.com", 443); !errors.Is(err, errFake) {
		t.Errorf("dial = %v, want it stopped at the opening", err)
	}
	if reqs := sets.requests(); len(reqs) != 1 || len(reqs[0].Addrs) != 1 || reqs[0].Addrs[0] != netip.MustParseAddr("192.0.2.50") ||
		reqs[0].Timeout != dialOpenTimeout {
		t.Errorf("opened %v, want only 192.0.2.50", reqs)
	}
}

func TestDefaultGateways(t *testing.T) {
	route := "Iface\tDestination\tGateway \tFlags\n" +
		"eth0\t00000000\t010012AC\t0003\n" + // default via 172.18.0.1
		"eth0\t000012AC\t00000000\t0001\n" //  172.18.0.0/16, on link
	got := defaultGateways(route)
	if len(got) != 1 || got[0] != netip.MustParseAddr("172.18.0.1") {
		t.Errorf("defaultGateways = %v, want [172.18.0.1]", got)
	}
}

// TestModelAddrWithheldFromTheAgent: with the model upstream named by its address, an allowed
// name that resolves to that address gets the agent nowhere: netd's proxies do not dial it, and
// the supervisor opens it in the agent's set for no name. The model forwarder alone dials it.
func TestModelAddrWithheldFromTheAgent(t *testing.T) {
	p := policy.Netd{Version: policy.Version, Project: "test", Egress: []string{"llm.example.com", "llm.example.com:8443"},
		Model: &policy.ModelAPI{Upstream: "https://192.0.2.77"}}
	cfg, err := newConfig(p.Marshal(), "", testAPIKey, "")
	if err != nil {
		t.Fatal(err)
	}
	var cur current
	cur.set(cfg)
	dns := fakeDNS{"llm.example.com": addrs("192.0.2.77"), "192.0.2.77": addrs("192.0.2.77")}

	// The proxies' dialer: the allowed name resolves only to the upstream's address. Every
	// opening fails, so that no dial ever leaves this machine, even with the control off.
	sets := &fakeSets{err: errFake}
	agent := &upstreamDialer{sets: sets, res: dns, timeout: time.Second, allowed: destinationCheck(&cur, nil)}
	if c, err := agent.dial(context.Background(), "llm.example.com", 443); err == nil || !errors.Is(err, errReserved) {
		if c != nil {
			c.Close()
		}
		t.Errorf("the agent's dial = %v, want the upstream's address refused", err)
	}
	if reqs := sets.requests(); len(reqs) != 0 {
		t.Errorf("opened %v for the agent's connection", reqs)
	}

	// The forwarder's: it opens the address in netd's set (stopped there: nothing leaves).
	model := &upstreamDialer{sets: sets, res: dns, timeout: time.Second, allowed: modelDestinationCheck(&cur, nil)}
	if _, err := model.dial(context.Background(), "192.0.2.77", 443); !errors.Is(err, errFake) {
		t.Errorf("the forwarder's dial = %v, want it stopped at the opening", err)
	}
	if reqs := sets.requests(); len(reqs) != 1 || reqs[0].Set != policy.SetNetd || reqs[0].Addrs[0] != netip.MustParseAddr("192.0.2.77") {
		t.Errorf("the forwarder opened %v, want 192.0.2.77 in netd's set", reqs)
	}

	// The supervisor: no agent-set request holds the address, whatever allowed name asks.
	rules, err := rulesFromPolicy(&p)
	if err != nil {
		t.Fatal(err)
	}
	req := setRequest{Set: policy.SetAgent, Name: "llm.example.com", Addrs: addrs("192.0.2.10", "192.0.2.77"), Ports: []int{8443}, Timeout: 60}
	if err := req.validate(rules); err == nil {
		t.Error("the supervisor would open the upstream's address in the agent's set")
	}
	req.Addrs = addrs("192.0.2.10")
	if err := req.validate(rules); err != nil {
		t.Errorf("another address of the allowed name: %v", err)
	}
}
