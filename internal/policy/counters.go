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

// Since returns c less base, a listing of the same ruleset taken earlier: what was counted after
// base was taken. Rules are matched by chain and comment, in order; no count goes below zero.
func (c Counters) Since(base Counters) Counters {
	left := map[[2]string][]RuleCounter{}
	for _, r := range base.Rules {
		k := [2]string{r.Chain, r.Comment}
		left[k] = append(left[k], r)
	}
	out := c
	out.Rules = make([]RuleCounter, len(c.Rules))
	for i, r := range c.Rules {
		k := [2]string{r.Chain, r.Comment}
		if b := left[k]; len(b) > 0 {
			r.Packets, r.Bytes = max(r.Packets-b[0].Packets, 0), max(r.Bytes-b[0].Bytes, 0)
			left[k] = b[1:]
		}
		out.Rules[i] = r
	}
	out.DroppedPkts, out.DroppedBytes = max(c.DroppedPkts-base.DroppedPkts, 0), max(c.DroppedBytes-base.DroppedBytes, 0)
	out.AcceptedPkts, out.AcceptedBytes = max(c.AcceptedPkts-base.AcceptedPkts, 0), max(c.AcceptedBytes-base.AcceptedBytes, 0)
	return out
}
