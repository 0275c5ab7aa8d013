package policy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRulesetIsAtomicAndScoped(t *testing.T) {
	rs := string(Ruleset(NetdUID))
	if strings.Contains(rs, "flush ruleset") || strings.Contains(rs, "flush table ip nat") {
		t.Error("Ruleset flushes more than its own table; Docker's DNS NAT would be lost")
	}
	idiom := "table inet abox\ndelete table inet abox\n\ntable inet abox {"
	if !strings.Contains(rs, idiom) {
		t.Errorf("Ruleset lacks the declare/delete/recreate idiom %q", idiom)
	}
	for _, want := range []string{
		"meta skuid != 990 udp dport 53 counter redirect to :15353",
		"meta skuid != 990 tcp dport 443 counter redirect to :15443",
		"meta skuid != 990 tcp dport 80 counter redirect to :15080",
		"type nat hook output priority -110",
		"ip daddr 127.0.0.11 meta skuid 990 counter accept",
		"ip daddr 127.0.0.0/8 counter accept",
		"meta skuid 990 ip daddr . tcp dport @netd_dst counter accept",
		"ip daddr . tcp dport @agent_dst counter accept",
		"type filter hook input priority 0; policy drop;",
	} {
		if !strings.Contains(rs, want) {
			t.Errorf("Ruleset lacks %q", want)
		}
	}
	if strings.Contains(rs, `oif "lo"`) || strings.Contains(rs, "oif lo") {
		t.Error("Ruleset matches oif lo, which a nat redirect does not change")
	}
}

// ruleLine matches a rule of the rendered ruleset: it has a verdict and a comment.
var ruleLine = regexp.MustCompile(`^\t\t(.*) comment "([^"]+)"$`)

func TestEveryRuleIsCountedAndNamed(t *testing.T) {
	seen := map[string]bool{}
	n := 0
	for _, line := range strings.Split(string(Ruleset(NetdUID)), "\n") {
		if !strings.HasPrefix(line, "\t\t") || strings.HasPrefix(line, "\t\ttype ") ||
			strings.HasPrefix(line, "\t\tsize ") || strings.HasPrefix(line, "\t\tflags ") {
			continue
		}
		m := ruleLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("rule without a comment: %q", line)
			continue
		}
		n++
		if !strings.Contains(m[1], " counter ") && !strings.HasPrefix(m[1], "counter ") {
			t.Errorf("rule %q has no counter", m[2])
		}
		if seen[m[2]] {
			t.Errorf("comment %q is used twice", m[2])
		}
		seen[m[2]] = true
	}
	if n < 15 {
		t.Errorf("found %d rules, want at least 15", n)
	}
}

func TestRulesetParsesWithNft(t *testing.T) {
	nft, err := exec.LookPath("nft")
	if err != nil {
		t.Skip("nft not on PATH")
	}
	f := filepath.Join(t.TempDir(), RulesFile)
	if err := os.WriteFile(f, Ruleset(NetdUID), 0o644); err != nil {
		t.Fatal(err)
	}
	// -c: check only; nothing is loaded into this namespace.
	out, err := exec.Command(nft, "-c", "-f", f).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("Operation not permitted")) {
			t.Skipf("nft -c needs CAP_NET_ADMIN: %s", out)
		}
		t.Fatalf("nft -c -f: %v\n%s", err, out)
	}
}

// TestExpectedRulesetMatchesRuleset catches a [Ruleset] edit without a regenerated
// ruleset.json: the chains and the comments of their rules, in order, must agree.
func TestExpectedRulesetMatchesRuleset(t *testing.T) {
	objs, err := parseListing(ExpectedRuleset(NetdUID))
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON []string
	for _, o := range objs {
		switch o.kind {
		case "chain", "set":
			fromJSON = append(fromJSON, o.kind+" "+o.str("name"))
		case "rule":
			fromJSON = append(fromJSON, "rule "+o.str("chain")+" "+o.str("comment"))
		}
	}
	if got, want := renderedOutline(t), fromJSON; !slices.Equal(got, want) {
		t.Errorf("Ruleset outline = %q\nruleset.json outline = %q\nregenerate ruleset.json", got, want)
	}
}

// renderedOutline lists the sets, chains and rule comments of [Ruleset] in listing order: nft
// lists sets before chains, and chains before their rules.
func renderedOutline(t *testing.T) []string {
	t.Helper()
	var sets, chains, rules []string
	chain := ""
	for _, line := range strings.Split(string(Ruleset(NetdUID)), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[2] == "{" && strings.HasPrefix(line, "\t") {
			switch f[0] {
			case "set":
				sets = append(sets, "set "+f[1])
			case "chain":
				chain = f[1]
				chains = append(chains, "chain "+chain)
			}
			continue
		}
		if m := ruleLine.FindStringSubmatch(line); m != nil {
			rules = append(rules, "rule "+chain+" "+m[2])
		}
	}
	return slices.Concat(sets, chains, rules)
}

// TestRulesetMarksAreTheConstants: the marks the ruleset's text sets and matches are the ones netd's
// supervisor gives its verdicts and the queue rule selects; a typo in either would leave held
// flows unjudged (dropped) or let a verdict mark match nothing.
func TestRulesetMarksAreTheConstants(t *testing.T) {
	rs := string(Ruleset(NetdUID))
	held, pinned := MarkAgentFlow|MarkTLSHeld, MarkAgentFlow|MarkTLSPinned
	allowed, refused := MarkAgentFlow|MarkTLSAllowed, MarkAgentFlow|MarkTLSRefused
	both := fmt.Sprintf("ct mark { 0x%08x, 0x%08x }", held, pinned)
	for _, want := range []string{
		fmt.Sprintf("ct mark set 0x%08x comment \"netd's new flow\"", MarkNetdFlow),
		fmt.Sprintf("ct mark set 0x%08x comment \"another uid's new flow\"", MarkAgentFlow),
		fmt.Sprintf("ct mark 0x%08x ip daddr . tcp dport @%s counter ct mark set 0x%08x", MarkAgentFlow, SetTLS, held),
		fmt.Sprintf("ct mark 0x%08x counter accept comment \"held tls not redirected\"", held),
		fmt.Sprintf("%s meta mark 0x%08x counter ct mark set 0x%08x meta mark set 0x00000000 accept", both, VerdictAllow, pinned),
		fmt.Sprintf("%s meta mark 0x%08x counter meta mark set 0x00000000 accept", both, VerdictPass),
		fmt.Sprintf("%s meta mark 0x%08x counter ct mark set 0x%08x reject", both, VerdictDeny, refused),
		fmt.Sprintf("ct direction original ct mark 0x%08x counter reject with tcp reset comment \"tls flow refused\"", refused),
		fmt.Sprintf("ct direction original %s counter drop comment \"tls held or pinned, not judged\"", both),
		fmt.Sprintf("ct mark 0x%08x meta mark 0x%08x counter ct mark set 0x%08x meta mark set 0x00000000 accept comment \"in tls hello acknowledged\"", pinned, VerdictFinal, allowed),
		fmt.Sprintf("ct mark 0x%08x meta mark 0x%08x counter meta mark set 0x00000000 accept comment \"in tls pinned, a packet judged\"", pinned, VerdictPass),
		fmt.Sprintf("ct mark & 0x%08x == 0x%08x ct direction original meta skuid 0", MarkOwnerMask, MarkAgentFlow),
	} {
		if !strings.Contains(rs, want) {
			t.Errorf("Ruleset lacks %q", want)
		}
	}
	// The queue rules select the flows by their bits: held and pinned have the queue bit, and
	// only pinned has the bit the incoming rule asks for; allowed and refused have neither.
	q := string(QueueRules())
	for _, want := range []string{
		fmt.Sprintf("-A OUTPUT -m connmark --mark 0x%x/0x%x -m mark --mark 0x0 -j NFQUEUE --queue-num %d", MarkTLSQueue, MarkTLSQueue, TLSQueue),
		fmt.Sprintf("-A INPUT -m connmark --mark 0x%x/0x%x -m mark --mark 0x0 -j NFQUEUE --queue-num %d", MarkTLSPinned&^MarkTLSQueue, MarkTLSPinned&^MarkTLSQueue, TLSQueue),
	} {
		if !strings.Contains(q, want) {
			t.Errorf("QueueRules lacks %q:\n%s", want, q)
		}
	}
	in := MarkTLSPinned &^ MarkTLSQueue
	for _, m := range []struct {
		mark      int
		out, inOK bool
	}{{MarkTLSHeld, true, false}, {MarkTLSPinned, true, true}, {MarkTLSAllowed, false, false}, {MarkTLSRefused, false, false}} {
		if got := m.mark&MarkTLSQueue != 0; got != m.out {
			t.Errorf("mark %#x: queued going out %v, want %v", m.mark, got, m.out)
		}
		if got := m.mark&in != 0; got != m.inOK {
			t.Errorf("mark %#x: queued coming in %v, want %v", m.mark, got, m.inOK)
		}
	}
}
