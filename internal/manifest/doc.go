// Package manifest reads, validates and edits agentbox.yaml, the per-project manifest.
//
// The manifest is the user's statement of what the sandbox may reach. It lives in the workspace,
// which the agent can write, so abox never trusts it blindly: decoding is strict (a mistyped key
// must fail, not quietly turn a control off), every field is checked against a charset at this
// boundary so no value can inject into a rendered Dockerfile, nft ruleset, JSON file or docker
// argv, and `abox run` compares it with the copy approved at `abox up`.
//
// Edits made by the CLI go through [Doc], which changes the YAML node tree in place, so fields
// and comments a command does not own survive it.
package manifest

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Header is written at the top of a manifest abox creates.
const Header = `# agentbox.yaml — what this project's abox sandbox may reach.
# Safe to edit by hand; abox keeps your comments and unknown keys are refused.
# abox run refuses a manifest changed since the last ` + "`abox up`" + `, which shows the diff.
`

// Doc is a manifest as a YAML node tree, for edits that keep every field and comment a command
// does not own. Every edit is followed by [Doc.Manifest], which re-validates the whole result.
type Doc struct {
	root *yaml.Node // the document node
}

// ParseDoc parses data into a [Doc]. It does not validate; call [Doc.Manifest] for that.
func ParseDoc(data []byte, source string) (*Doc, error) {
	if _, err := decode(data, source); err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, yamlError(source, err)
	}
	if n.Kind == 0 {
		n = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	if n.Kind != yaml.DocumentNode || len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{Source: source, Problems: []Problem{{Loc: "file", Msg: "is not a YAML mapping"}}}
	}
	spellFlowNulls(&n, false)
	return &Doc{root: &n}, nil
}

// spellFlowNulls writes out the empty nulls of flow collections, as in "{timeout}" or
// "{timeout: }", as "null". yaml.v3 cannot emit an empty plain scalar in a flow collection and
// quotes it instead, so Bytes would turn the null into an empty string and a valid manifest into
// an invalid one.
func spellFlowNulls(n *yaml.Node, inFlow bool) {
	inFlow = inFlow || n.Style&yaml.FlowStyle != 0
	if inFlow && n.Kind == yaml.ScalarNode && n.Value == "" && n.ShortTag() == "!!null" {
		n.Value = "null"
	}
	for _, c := range n.Content {
		spellFlowNulls(c, inFlow)
	}
}

// NewDoc returns a Doc holding m, with the standard header comment.
func NewDoc(m *Manifest) (*Doc, error) {
	var body yaml.Node
	if err := body.Encode(m); err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}
	body.HeadComment = Header
	return &Doc{root: &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{&body}}}, nil
}

// Bytes encodes the document with two-space indentation.
func (d *Doc) Bytes() []byte { return EncodeNode(d.root) }

// EncodeNode encodes a YAML node tree with two-space indentation, as abox writes the YAML files
// it edits (agentbox.yaml here, config.yaml in config).
func EncodeNode(root *yaml.Node) []byte {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		panic(err) // a node tree built from valid YAML always encodes
	}
	enc.Close()
	return buf.Bytes()
}

// Manifest decodes and validates the edited document.
func (d *Doc) Manifest(source string) (*Manifest, error) {
	return Parse(d.Bytes(), source)
}

func (d *Doc) top() *yaml.Node { return d.root.Content[0] }

// How lookup treats the nodes on a path.
type access int

const (
	read   access = iota // follow aliases; change nothing
	edit                 // make every node on the path the document's own (see [Doc.own])
	create               // edit, and create missing mappings along the way
)

// lookup returns the value node at path (a sequence of mapping keys), or nil.
func (d *Doc) lookup(a access, path ...string) *yaml.Node {
	n := d.top()
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		v := mapGet(n, key)
		if v != nil && a == read && v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if v != nil && a != read {
			d.own(v)
		}
		if v == nil || v.Tag == "!!null" {
			if a != create {
				return nil
			}
			if v == nil {
				v = &yaml.Node{Kind: yaml.MappingNode}
				n.Content = append(n.Content, scalar(key), v)
			} else {
				*v = yaml.Node{Kind: yaml.MappingNode}
			}
		}
		n = v
	}
	return n
}

// own prepares n for an edit that must change only the field it belongs to. An alias (*name)
// is replaced by a copy of the value it names, and every alias of an anchored value (&name) by a
// copy of that value. Without this, appending to "mask: *w" would replace the alias, and with it
// every item it stood for, and editing "watch: &w [...]" would change mask too or leave it naming
// an anchor that no longer exists.
func (d *Doc) own(n *yaml.Node) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		unalias(n)
	}
	if n.Anchor == "" {
		return
	}
	var walk func(*yaml.Node)
	walk = func(m *yaml.Node) {
		if m.Kind == yaml.AliasNode && m.Alias == n {
			unalias(m)
		}
		for _, c := range m.Content {
			walk(c)
		}
	}
	walk(d.root)
}

// unalias replaces the alias a by a copy of the value it names, keeping a's comments.
func unalias(a *yaml.Node) {
	c := clone(a.Alias)
	c.HeadComment, c.LineComment, c.FootComment = a.HeadComment, a.LineComment, a.FootComment
	*a = *c
}

// clone returns a deep copy of n without its anchor.
func clone(n *yaml.Node) *yaml.Node {
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = clone(k)
	}
	return &c
}

func mapGet(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

// Set replaces or adds the value at path, keeping the key's comments.
func (d *Doc) Set(value any, path ...string) error {
	var v yaml.Node
	if err := v.Encode(value); err != nil {
		return fmt.Errorf("encoding %v: %w", path, err)
	}
	parent := d.lookup(create, path[:len(path)-1]...)
	if parent == nil || parent.Kind != yaml.MappingNode {
		return fmt.Errorf("%v is not a mapping", path[:len(path)-1])
	}
	key := path[len(path)-1]
	if old := mapGet(parent, key); old != nil {
		d.own(old)
		v.HeadComment, v.LineComment, v.FootComment = old.HeadComment, old.LineComment, old.FootComment
		*old = v
		return nil
	}
	parent.Content = append(parent.Content, scalar(key), &v)
	return nil
}

// Delete removes the key at path, if present.
func (d *Doc) Delete(path ...string) {
	parent := d.lookup(edit, path[:len(path)-1]...)
	if parent == nil || parent.Kind != yaml.MappingNode {
		return
	}
	key := path[len(path)-1]
	for i := 0; i+1 < len(parent.Content); i += 2 {
		if parent.Content[i].Value == key {
			d.own(parent.Content[i+1])
			parent.Content = append(parent.Content[:i], parent.Content[i+2:]...)
			return
		}
	}
}

// Strings returns the scalar items of the sequence at path.
func (d *Doc) Strings(path ...string) []string {
	n := d.lookup(read, path...)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, it := range n.Content {
		out = append(out, it.Value)
	}
	return out
}

// Append adds values to the sequence at path, creating it if needed. Existing items and their
// comments are kept.
func (d *Doc) Append(values []string, path ...string) error {
	n := d.lookup(edit, path...)
	if n == nil || n.Kind != yaml.SequenceNode {
		if err := d.Set([]string{}, path...); err != nil {
			return err
		}
		n = d.lookup(edit, path...)
		n.Style = 0
	}
	for _, v := range values {
		n.Content = append(n.Content, scalar(v))
	}
	return nil
}

// Remove deletes the items of the sequence at path for which drop returns true. An emptied
// sequence is removed with its key.
func (d *Doc) Remove(drop func(string) bool, path ...string) (removed []string) {
	n := d.lookup(edit, path...)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	kept := n.Content[:0]
	for _, it := range n.Content {
		if drop(it.Value) {
			removed = append(removed, it.Value)
			continue
		}
		kept = append(kept, it)
	}
	n.Content = kept
	if len(kept) == 0 {
		d.Delete(path...)
	}
	return removed
}

// Keys returns the keys of the mapping at path.
func (d *Doc) Keys(path ...string) []string {
	n := d.lookup(read, path...)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

// DeleteIfEmpty removes the mapping or sequence at path if it has no content.
func (d *Doc) DeleteIfEmpty(path ...string) {
	if n := d.lookup(read, path...); n != nil && len(n.Content) == 0 && n.Kind != yaml.ScalarNode {
		d.Delete(path...)
	}
}
