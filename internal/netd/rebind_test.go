package netd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/policy"
)

// TestRebindingOpensNothing runs a whole netd (the supervisor and its set manager, the serving
// child's resolver and TLS proxy, talking over the control channel; only nft is a recorder)
// against a zone whose allowed names answer with cloud metadata, Docker's resolver, loopback,
// "this network", class E and broadcast. The agent gets the answers, but no such address
// reaches an nft batch for the agent's set, by DNS on a non-TLS port or through the TLS proxy,
// while the ordinary address in the same answer does.
func TestRebindingOpensNothing(t *testing.T) {
	nft := okNFT(t)
	f := startSupervisorWith(t, nft, nil, policy.Netd{Version: policy.Version, Project: "p",
		Egress: []string{"rebind.example.com:22", "metadata.example.com:22", "loopback.example.com"}})
	f.waitEvent(t, policy.EventReady, 1)

	if in := f.ask(t, "metadata.example.com."); len(in.Answer) != 5 {
		t.Errorf("metadata.example.com: %v, want the zone's answer as it came", in.Answer)
	}
	if in := f.ask(t, "rebind.example.com."); len(in.Answer) != 4 {
		t.Errorf("rebind.example.com: %v, want the zone's answer as it came", in.Answer)
	}
	if _, err := getVia(f.addrs.sni, "loopback.example.com", nil); err == nil {
		t.Error("the TLS proxy connected loopback.example.com to loopback")
	}

	var agent []string
	for _, b := range nft.batches() {
		for _, line := range strings.Split(b, "\n") {
			if strings.Contains(line, policy.SetAgent) {
				agent = append(agent, line)
			}
		}
	}
	got := strings.Join(agent, "\n")
	if !strings.Contains(got, "192.0.2.40 . 22") {
		t.Errorf("agent set batches %q, want rebind.example.com's ordinary address opened", got)
	}
	for _, never := range []string{"169.254.169.254", "127.0.0.11", "127.0.0.1 ", "240.0.0.1", "0.1.2.3", "255.255.255.255"} {
		if strings.Contains(got, never) {
			t.Errorf("%s reached the agent's set:\n%s", never, got)
		}
	}
}

// TestSupervisorRefusesRebindingChild: a serving child that skipped its own check (taken over,
// say) asks the supervisor to open reserved addresses for a name the policy allows on that
// port; the supervisor refuses each, and nft never runs.
func TestSupervisorRefusesRebindingChild(t *testing.T) {
	s, _, child, _ := hostileChild(t)
	r := bufio.NewReader(child)
	for i, addr := range []string{"169.254.169.254", "127.0.0.11", "127.0.0.1", "240.0.0.1", "0.1.2.3", "255.255.255.255"} {
		line := fmt.Sprintf(`{"op":"add","id":%d,"set":{"set":"agent_dst","name":"git.example.com","addrs":[%q],"ports":[22],"timeout":60}}`, i+1, addr)
		io.WriteString(child, line+"\n")
		b, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil || m.Op != opResult || m.Error == "" {
			t.Errorf("%s answered %s, want a refusal", addr, b)
		}
	}
	if b := s.nft.(*fakeNFT).batches(); len(b) != 0 {
		t.Errorf("nft ran for reserved addresses: %q", b)
	}
	// The control: the same request with an ordinary address is applied.
	io.WriteString(child, `{"op":"add","id":9,"set":{"set":"agent_dst","name":"git.example.com","addrs":["192.0.2.1"],"ports":[22],"timeout":60}}`+"\n")
	if b, err := r.ReadBytes('\n'); err != nil || strings.Contains(string(b), `"error"`) {
		t.Fatalf("an ordinary address was refused: %s %v", b, err)
	}
	if b := s.nft.(*fakeNFT).batches(); len(b) != 1 || !strings.Contains(b[0], "192.0.2.1 . 22") {
		t.Errorf("batches = %q, want the ordinary address added", b)
	}
}
