package policy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// rulesetJSON is `nft -j list table inet abox` after loading [Ruleset] with nft 1.0.6 (Debian 12)
// in a container. Regenerate it the same way whenever [Ruleset] changes:
//
//	nft -f netpolicy.nft && nft -j list table inet abox
//
// TestExpectedRulesetMatchesRuleset fails when the two drift apart.
//
//go:embed ruleset.json
var rulesetJSON []byte

// ExpectedRuleset returns the listing (`nft -j list table inet abox`) that loading
// [Ruleset](netdUID) produces with the nft of the netd image. It is the expected side of
// [CompareRuleset]. The stored listing was made with [NetdUID]; the ruleset names netd's uid only
// in its skuid matches, which nft lists in one form, so another uid is substituted there.
func ExpectedRuleset(netdUID int) []byte {
	if netdUID == NetdUID {
		return slices.Clone(rulesetJSON)
	}
	return bytes.ReplaceAll(rulesetJSON, []byte(fmt.Sprintf(skuidMatch, NetdUID)), []byte(fmt.Sprintf(skuidMatch, netdUID)))
}

// skuidMatch is how nft -j lists the right side of a match on the socket's uid.
const skuidMatch = `"skuid"}}, "right": %d}`

// nftObject is one element of an `nft -j` listing: {"<kind>": {…}}.
type nftObject struct {
	kind string
	body map[string]any
}

func (o nftObject) str(key string) string { s, _ := o.body[key].(string); return s }

// tableKey is "<family> <table>" of the table an object belongs to.
func (o nftObject) tableKey() string {
	t := o.str("table")
	if o.kind == "table" {
		t = o.str("name")
	}
	return o.str("family") + " " + t
}

// String names the object for an error message.
func (o nftObject) String() string {
	switch o.kind {
	case "table":
		return "table " + o.tableKey()
	case "rule":
		s := fmt.Sprintf("rule in chain %s %s", o.tableKey(), o.str("chain"))
		if c := o.str("comment"); c != "" {
			s += fmt.Sprintf(" (%q)", c)
		}
		return s
	default:
		return fmt.Sprintf("%s %s %s", o.kind, o.tableKey(), o.str("name"))
	}
}

// parseListing decodes an `nft -j list …` document, dropping its metainfo.
func parseListing(data []byte) ([]nftObject, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("decoding nft listing: %w", err)
	}
	if doc.Nftables == nil {
		return nil, errors.New("decoding nft listing: no \"nftables\" array")
	}
	var objs []nftObject
	for i, m := range doc.Nftables {
		if len(m) != 1 {
			return nil, fmt.Errorf("decoding nft listing: element %d has %d keys, want 1", i, len(m))
		}
		for kind, raw := range m {
			if kind == "metainfo" {
				continue
			}
			o := nftObject{kind: kind}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&o.body); err != nil || o.body == nil {
				return nil, fmt.Errorf("decoding nft listing: element %d (%s) is not an object", i, kind)
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// canonical renders an object without what changes at run time: handles, counter values and
// the elements netd adds to sets.
func canonical(o nftObject) string {
	body := make(map[string]any, len(o.body))
	for k, v := range o.body {
		body[k] = v
	}
	delete(body, "handle")
	if o.kind == "set" || o.kind == "map" {
		delete(body, "elem")
	}
	if exprs, ok := body["expr"].([]any); ok {
		body["expr"] = zeroCounters(exprs)
	}
	b, _ := json.Marshal(map[string]any{o.kind: body}) // maps marshal with sorted keys
	return string(b)
}

func zeroCounters(exprs []any) []any {
	out := make([]any, len(exprs))
	for i, e := range exprs {
		if m, ok := e.(map[string]any); ok {
			if _, isCounter := m["counter"]; isCounter && len(m) == 1 {
				e = map[string]any{"counter": map[string]any{"packets": 0, "bytes": 0}}
			}
		}
		out[i] = e
	}
	return out
}

// ourTable is the table key of the abox table.
var ourTable = "inet " + Table

// CompareRuleset compares two `nft -j list ruleset` (or `list table`) documents. The abox table
// of live must equal that of expected object for object, ignoring handles, counter values and
// set elements. Every other table of live may hold only what Docker puts there for its embedded
// resolver at 127.0.0.11 (see [dockerDNSRule]); anything else is an error that names it. Tables
// other than abox in expected are ignored.
func CompareRuleset(expected, live []byte) error {
	exp, err := parseListing(expected)
	if err != nil {
		return fmt.Errorf("expected ruleset: %w", err)
	}
	got, err := parseListing(live)
	if err != nil {
		return fmt.Errorf("live ruleset: %w", err)
	}
	var errs []error
	errs = append(errs, compareOurTable(filterTable(exp, ourTable), filterTable(got, ourTable))...)
	for _, o := range got {
		if o.tableKey() == ourTable {
			continue
		}
		if err := checkForeign(o); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func filterTable(objs []nftObject, key string) []nftObject {
	var out []nftObject
	for _, o := range objs {
		if o.tableKey() == key {
			out = append(out, o)
		}
	}
	return out
}

// compareOurTable reports every object of the abox table that differs, is missing or is extra.
func compareOurTable(exp, got []nftObject) []error {
	if len(exp) == 0 {
		return []error{fmt.Errorf("expected ruleset has no table %s", ourTable)}
	}
	if len(got) == 0 {
		return []error{fmt.Errorf("table %s is not loaded", ourTable)}
	}
	var errs []error
	for i := 0; i < max(len(exp), len(got)); i++ {
		switch {
		case i >= len(got):
			errs = append(errs, fmt.Errorf("%s is missing", exp[i]))
		case i >= len(exp):
			errs = append(errs, fmt.Errorf("unexpected %s", got[i]))
		case canonical(exp[i]) != canonical(got[i]):
			errs = append(errs, fmt.Errorf("%s differs: want %s, got %s", got[i], canonical(exp[i]), canonical(got[i])))
		}
	}
	return errs
}

// checkForeign accepts an object of another table only if it is Docker's embedded-DNS plumbing:
// a table, a regular chain, a base chain whose policy is accept, or a [dockerDNSRule].
func checkForeign(o nftObject) error {
	switch o.kind {
	case "table":
		return nil
	case "chain":
		if _, base := o.body["hook"]; !base || o.str("policy") == "accept" {
			return nil
		}
		return fmt.Errorf("unexpected %s with policy %q", o, o.str("policy"))
	case "rule":
		if dockerDNSRule(o.body) || queueRule(o) {
			return nil
		}
		b, _ := json.Marshal(o.body["expr"])
		return fmt.Errorf("unexpected %s: %s", o, b)
	default:
		return fmt.Errorf("unexpected %s", o)
	}
}

// queueRule reports whether a rule is [QueueRules]' own, as nft lists it: in table ip mangle,
// a connection-mark match (opaque to nft's JSON), a match of packet mark 0, a counter and the
// NFQUEUE target. Nothing else may stand in another table: a rule there that set a packet's
// mark could forge a verdict. This one only holds packets; the verdicts are the supervisor's.
func queueRule(o nftObject) bool {
	if o.tableKey() != "ip mangle" {
		return false
	}
	exprs, _ := o.body["expr"].([]any)
	var shape []string
	for _, e := range exprs {
		m, _ := e.(map[string]any)
		switch {
		case len(m) != 1:
			return false
		case m["counter"] != nil:
			continue
		case m["xt"] != nil:
			xt, _ := m["xt"].(map[string]any)
			shape = append(shape, fmt.Sprintf("xt %v %v", xt["type"], xt["name"]))
		default:
			left, right, ok := match(e)
			meta, _ := left["meta"].(map[string]any)
			if !ok || meta == nil || meta["key"] != "mark" || fmt.Sprint(right) != "0" {
				return false
			}
			shape = append(shape, "meta mark 0")
		}
	}
	return slices.Equal(shape, []string{"xt match connmark", "meta mark 0", "xt target NFQUEUE"})
}

// dockerDNSRule reports whether a rule has the shape Docker gives its embedded-resolver NAT: a
// match on ip daddr or saddr 127.0.0.11, then only port and protocol matches and a counter,
// ending in a jump to a DOCKER_ chain or an xt DNAT/SNAT target (opaque to nft's JSON).
func dockerDNSRule(body map[string]any) bool {
	exprs, ok := body["expr"].([]any)
	if !ok || len(exprs) < 2 || !matchesDockerDNSAddr(exprs[0]) {
		return false
	}
	for _, e := range exprs[1 : len(exprs)-1] {
		m, _ := e.(map[string]any)
		if _, isCounter := m["counter"]; isCounter && len(m) == 1 {
			continue
		}
		if !matchesPortOrProto(e) {
			return false
		}
	}
	return dockerDNSVerdict(exprs[len(exprs)-1])
}

// match returns the left-hand side and right-hand side of an "==" match expression.
func match(e any) (left map[string]any, right any, ok bool) {
	m, _ := e.(map[string]any)
	mt, _ := m["match"].(map[string]any)
	if len(m) != 1 || mt == nil || mt["op"] != "==" {
		return nil, nil, false
	}
	left, _ = mt["left"].(map[string]any)
	return left, mt["right"], left != nil
}

func payloadField(left map[string]any) (proto, field string) {
	p, _ := left["payload"].(map[string]any)
	proto, _ = p["protocol"].(string)
	field, _ = p["field"].(string)
	return proto, field
}

func matchesDockerDNSAddr(e any) bool {
	left, right, ok := match(e)
	if !ok || right != "127.0.0.11" {
		return false
	}
	proto, field := payloadField(left)
	return proto == "ip" && (field == "daddr" || field == "saddr")
}

func matchesPortOrProto(e any) bool {
	left, right, ok := match(e)
	if !ok {
		return false
	}
	if _, isNum := right.(json.Number); !isNum {
		return false
	}
	if meta, _ := left["meta"].(map[string]any); meta != nil {
		return meta["key"] == "l4proto"
	}
	proto, field := payloadField(left)
	return (proto == "tcp" || proto == "udp") && (field == "dport" || field == "sport")
}

func dockerDNSVerdict(e any) bool {
	m, _ := e.(map[string]any)
	if len(m) != 1 {
		return false
	}
	if j, ok := m["jump"].(map[string]any); ok {
		t, _ := j["target"].(string)
		return strings.HasPrefix(t, "DOCKER_")
	}
	if xt, ok := m["xt"].(map[string]any); ok {
		return xt["type"] == "target" && (xt["name"] == "DNAT" || xt["name"] == "SNAT")
	}
	return false
}
