package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCountersSince: a later listing less an earlier one of the same ruleset is what was counted
// in between, rule by rule (matched by chain and comment) and in the totals, never below zero.
func TestCountersSince(t *testing.T) {
	base := Counters{DroppedPkts: 29, DroppedBytes: 1740, AcceptedPkts: 3, AcceptedBytes: 180, Rules: []RuleCounter{
		{Chain: "input", Comment: "in refused", Packets: 29, Bytes: 1740},
		{Chain: "output", Comment: "dns", Packets: 3, Bytes: 180},
	}}
	now := Counters{TS: "t", DroppedPkts: 31, DroppedBytes: 1860, AcceptedPkts: 10, AcceptedBytes: 600, Rules: []RuleCounter{
		{Chain: "input", Comment: "in refused", Packets: 30, Bytes: 1800},
		{Chain: "output", Comment: "dns", Packets: 10, Bytes: 600},
		{Chain: "output", Comment: "refused tcp", Packets: 1, Bytes: 60},
	}}
	want := Counters{TS: "t", DroppedPkts: 2, DroppedBytes: 120, AcceptedPkts: 7, AcceptedBytes: 420, Rules: []RuleCounter{
		{Chain: "input", Comment: "in refused", Packets: 1, Bytes: 60},
		{Chain: "output", Comment: "dns", Packets: 7, Bytes: 420},
		{Chain: "output", Comment: "refused tcp", Packets: 1, Bytes: 60},
	}}
	if d := cmp.Diff(want, now.Since(base)); d != "" {
		t.Errorf("Since (-want +got):\n%s", d)
	}
	if got := base.Since(now); got.DroppedPkts != 0 || got.Rules[0].Packets != 0 {
		t.Errorf("an earlier listing less a later one went below zero: %+v", got)
	}
}
