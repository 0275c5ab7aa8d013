package policy

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func readLive(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/live-docker.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// liveWith returns the live listing with the line holding old replaced by repl.
func liveWith(t *testing.T, old, repl string) []byte {
	t.Helper()
	live := readLive(t)
	if !bytes.Contains(live, []byte(old)) {
		t.Fatalf("testdata/live-docker.json lacks %q", old)
	}
	return bytes.Replace(live, []byte(old), []byte(repl), 1)
}

func TestCompareRuleset(t *testing.T) {
	const ruleRefused = `{"rule": {"family": "inet", "table": "abox", "chain": "output", "handle": 53, "comment": "refused"`
	const natTable = `{"table": {"family": "ip", "name": "nat", "handle": 1}}`
	tests := []struct {
		name    string
		live    []byte
		wantErr string // "" = no error; else a substring
	}{
		{"docker container as loaded", readLive(t), ""},
		{"only our table", ExpectedRuleset(NetdUID), ""},
		{"rule changed", liveWith(t, `"comment": "refused", "expr": [{"counter": {"packets": 0, "bytes": 0}}, {"reject"`,
			`"comment": "refused", "expr": [{"counter": {"packets": 0, "bytes": 0}}, {"accept": null}, {"reject"`), `rule in chain inet abox output ("refused") differs`},
		{"rule added", liveWith(t, ruleRefused, `{"rule": {"family": "inet", "table": "abox", "chain": "output", "handle": 99, "comment": "extra", "expr": [{"accept": null}]}},
`+ruleRefused), "differs"},
		{"chain policy accept", liveWith(t, `"hook": "output", "prio": 0, "policy": "drop"`, `"hook": "output", "prio": 0, "policy": "accept"`), "chain inet abox output differs"},
		{"table missing", []byte(`{"nftables": [` + natTable + `]}`), "table inet abox is not loaded"},
		{"foreign accept-all rule", liveWith(t, natTable, natTable+`,
{"table": {"family": "ip", "name": "filter", "handle": 7}},
{"rule": {"family": "ip", "table": "filter", "chain": "OUTPUT", "handle": 8, "expr": [{"accept": null}]}}`), "unexpected rule in chain ip filter OUTPUT"},
		{"foreign dnat elsewhere", liveWith(t, natTable, natTable+`,
{"rule": {"family": "ip", "table": "nat", "chain": "OUTPUT", "handle": 30, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "10.0.0.1"}}, {"xt": {"type": "target", "name": "DNAT"}}]}}`), "unexpected rule in chain ip nat OUTPUT"},
		{"foreign drop chain", liveWith(t, natTable, natTable+`,
{"chain": {"family": "ip", "table": "nat", "name": "X", "handle": 31, "type": "nat", "hook": "output", "prio": -300, "policy": "drop"}}`), `unexpected chain ip nat X with policy "drop"`},
		{"queue rule that marks", liveWith(t, `{"xt": {"type": "target", "name": "NFQUEUE"}}`, `{"xt": {"type": "target", "name": "MARK"}}`),
			"unexpected rule in chain ip mangle"},
		{"queue rule in another table", liveWith(t, `"table": "mangle", "chain": "OUTPUT", "handle": 4`, `"table": "nat", "chain": "OUTPUT", "handle": 4`),
			"unexpected rule in chain ip nat OUTPUT"},
		{"queue rule for marked packets", liveWith(t, `"left": {"meta": {"key": "mark"}}, "right": 0}`, `"left": {"meta": {"key": "mark"}}, "right": 2577}`),
			"unexpected rule in chain ip mangle"},
		{"foreign set", liveWith(t, natTable, natTable+`,
{"set": {"family": "ip", "name": "s", "table": "nat", "type": "ipv4_addr", "handle": 32}}`), "unexpected set ip nat s"},
		{"not json", []byte("table inet abox {}"), "live ruleset: decoding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CompareRuleset(ExpectedRuleset(NetdUID), tc.live)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CompareRuleset = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("CompareRuleset = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCompareRulesetNeedsExpectedTable(t *testing.T) {
	err := CompareRuleset([]byte(`{"nftables": []}`), readLive(t))
	if err == nil || !strings.Contains(err.Error(), "expected ruleset has no table") {
		t.Errorf("CompareRuleset(empty, live) = %v", err)
	}
}

func TestParseCounters(t *testing.T) {
	c, err := ParseCounters(readLive(t))
	if err != nil {
		t.Fatal(err)
	}
	byComment := map[string]RuleCounter{}
	for _, r := range c.Rules {
		byComment[r.Comment] = r
	}
	if got := byComment["dns to netd"]; got.Chain != "nat_output" || got.Packets != 4 || got.Bytes != 120 {
		t.Errorf("dns to netd = %+v, want nat_output 4/120", got)
	}
	if got := byComment["refused tcp"]; got.Packets != 1 || got.Bytes != 60 {
		t.Errorf("refused tcp = %+v, want 1/60", got)
	}
	if c.DroppedPkts != 1 || c.DroppedBytes != 60 {
		t.Errorf("dropped = %d/%d, want 1/60 (the refused tcp SYN)", c.DroppedPkts, c.DroppedBytes)
	}
	if c.AcceptedPkts <= 0 {
		t.Errorf("accepted = %d, want > 0 (loopback traffic)", c.AcceptedPkts)
	}
	if len(c.Rules) != 45 {
		t.Errorf("%d counted rules, want 45", len(c.Rules))
	}
}

func TestParseCountersRefusesGarbage(t *testing.T) {
	for _, in := range []string{"", "{}", `{"nftables": [{"rule": 5}]}`, `{"nftables": []}`} {
		if _, err := ParseCounters([]byte(in)); err == nil {
			t.Errorf("ParseCounters(%q) = nil error", in)
		}
	}
}

// TestExpectedRulesetForAnotherUID: the listing expected for a netd of another uid (beside an
// agent of uid 990) is what nft itself lists after loading the ruleset rendered for it
// (testdata/ruleset-991.json, made with the netd image's nft as ruleset.json is), and names
// netd's default uid nowhere.
func TestExpectedRulesetForAnotherUID(t *testing.T) {
	live, err := os.ReadFile("testdata/ruleset-991.json")
	if err != nil {
		t.Fatal(err)
	}
	want := ExpectedRuleset(991)
	if err := CompareRuleset(want, live); err != nil {
		t.Errorf("CompareRuleset(ExpectedRuleset(991), nft's listing) = %v", err)
	}
	if bytes.Contains(want, []byte(`"skuid"}}, "right": 990`)) {
		t.Error("ExpectedRuleset(991) still matches uid 990")
	}
	if err := CompareRuleset(ExpectedRuleset(NetdUID), live); err == nil {
		t.Error("the listing for uid 991 compares equal to uid 990's: the comparison does not see the uid")
	}
}
