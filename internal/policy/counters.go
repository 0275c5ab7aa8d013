package policy

import (
	"encoding/json"
	"fmt"
)

// ParseCounters reads the counters of the abox table from an `nft -j list table inet abox` (or
// `list ruleset`) document. Each counted rule becomes a [RuleCounter] named by its comment; rules
// that accept add to the accepted totals, rules that drop or reject to the dropped totals, and
// the nat redirects to neither. TS is left for the caller.
func ParseCounters(listing []byte) (Counters, error) {
	objs, err := parseListing(listing)
	if err != nil {
		return Counters{}, err
	}
	c := Counters{Rules: []RuleCounter{}}
	for _, o := range filterTable(objs, ourTable) {
		if o.kind != "rule" {
			continue
		}
		exprs, _ := o.body["expr"].([]any)
		pk, by, ok := ruleCounter(exprs)
		if !ok {
			continue
		}
		c.Rules = append(c.Rules, RuleCounter{Chain: o.str("chain"), Comment: o.str("comment"), Packets: pk, Bytes: by})
		switch verdict(exprs) {
		case "accept":
			c.AcceptedPkts += pk
			c.AcceptedBytes += by
		case "drop", "reject":
			c.DroppedPkts += pk
			c.DroppedBytes += by
		}
	}
	if len(c.Rules) == 0 {
		return c, fmt.Errorf("no counters in table %s", ourTable)
	}
	return c, nil
}

// ruleCounter returns the values of a rule's counter statement.
func ruleCounter(exprs []any) (packets, bytes int64, ok bool) {
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		ctr, isCounter := m["counter"].(map[string]any)
		if !isCounter {
			continue
		}
		p, pok := int64Of(ctr["packets"])
		b, bok := int64Of(ctr["bytes"])
		return p, b, pok && bok
	}
	return 0, 0, false
}

// verdict returns the key of a rule's last statement: accept, drop, reject, redirect…
func verdict(exprs []any) string {
	if len(exprs) == 0 {
		return ""
	}
	m, _ := exprs[len(exprs)-1].(map[string]any)
	for k := range m {
		return k
	}
	return ""
}

func int64Of(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}
