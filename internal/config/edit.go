package config

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/statefs"
)

// Doc is config.yaml as a YAML node tree, for the edits abox makes to it (`abox gateway update`
// pins the gateway image, `abox init` adds a profile): they change only the keys they name and
// keep every other key and comment the user wrote. [EditFile] validates the result before
// anything is written.
type Doc struct {
	root *yaml.Node // the document node; its one child is a mapping
}

// ParseDoc parses data into a [Doc]. It does not validate; [EditFile] does. An empty file is an
// empty mapping.
func ParseDoc(data []byte, source string) (*Doc, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	if n.Kind == 0 {
		n = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	if n.Kind != yaml.DocumentNode || len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: is not a YAML mapping", source)
	}
	return &Doc{root: &n}, nil
}

// Bytes encodes the document with two-space indentation.
func (d *Doc) Bytes() []byte { return manifest.EncodeNode(d.root) }

// child returns the value of key in the mapping m, adding an empty mapping when the key is
// missing or null; nil when m is not a mapping.
func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
				*v = yaml.Node{Kind: yaml.MappingNode, HeadComment: v.HeadComment, LineComment: v.LineComment}
			}
			return v
		}
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// set replaces the value at path (mapping keys) with value, keeping the comments of the value
// it replaces, and creates the mappings on the way.
func (d *Doc) set(value any, path ...string) error {
	var v yaml.Node
	if err := v.Encode(value); err != nil {
		return fmt.Errorf("encoding %s: %w", strings.Join(path, "."), err)
	}
	n := d.root.Content[0]
	for _, key := range path[:len(path)-1] {
		if n = child(n, key); n == nil || n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s is not a mapping", key)
		}
	}
	old := child(n, path[len(path)-1])
	v.HeadComment, v.LineComment, v.FootComment = old.HeadComment, old.LineComment, old.FootComment
	*old = v
	return nil
}

// has reports whether the top-level mapping has key.
func (d *Doc) has(key string) bool {
	m := d.root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// SetGatewayImage pins gateway.image to image.
func (d *Doc) SetGatewayImage(image string) error {
	return d.set(image, "gateway", "image")
}

// SetProfile adds the profile name, or replaces it. A file without profiles has the default
// ones (see [Parse]), and a profiles mapping replaces them: so that adding one keeps them, they
// are written out first.
func (d *Doc) SetProfile(name string, p Profile) error {
	if !d.has("profiles") {
		if err := d.set(Default().Profiles, "profiles"); err != nil {
			return err
		}
	}
	return d.set(p, "profiles", name)
}

// SetCredential turns on injected-credential mode: claude_code.credential names the secret netd
// injects ([ClaudeCode.Credential]).
func (d *Doc) SetCredential(name string) error {
	return d.set(name, "claude_code", "credential")
}

// ClearCredential turns injected-credential mode off, back to the login volume: it removes
// claude_code.credential, and api_upstream and server_tools, which are used only with one.
// It reports whether there was anything to remove.
func (d *Doc) ClearCredential() bool {
	m := d.root.Content[0]
	var cc *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "claude_code" {
			cc = m.Content[i+1]
		}
	}
	if cc == nil || cc.Kind != yaml.MappingNode {
		return false
	}
	removed := false
	for i := 0; i+1 < len(cc.Content); {
		if k := cc.Content[i].Value; k == "credential" || k == "api_upstream" || k == "server_tools" {
			cc.Content = append(cc.Content[:i], cc.Content[i+2:]...)
			removed = true
			continue
		}
		i += 2
	}
	return removed
}

// EditFile applies edit to the config.yaml at path, validates the result as [Parse] does and
// writes it atomically (see [statefs.WriteFile]), returning the configuration it wrote. Without
// a file it starts from fallback's [Config.Marshal]. When any step fails, nothing is written.
func EditFile(path string, fallback *Config, edit func(*Doc) error) (*Config, error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = fallback.Marshal(), nil
	}
	if err != nil {
		return nil, err
	}
	d, err := ParseDoc(data, path)
	if err != nil {
		return nil, err
	}
	if err := edit(d); err != nil {
		return nil, fmt.Errorf("editing %s: %w", path, err)
	}
	out := d.Bytes()
	c, err := Parse(out, path)
	if err != nil {
		return nil, err
	}
	if err := statefs.WriteFile(path, out, statefs.PrivateMode); err != nil {
		return nil, err
	}
	return c, nil
}
