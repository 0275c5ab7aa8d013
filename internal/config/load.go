package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/termtext"
)

// MaxSize is the largest configuration file abox reads.
const MaxSize = 1 << 20

// renamed maps keys of the original Python abox to what replaced them, so a copied config gets a
// precise error rather than "unknown key".
var renamed = map[string]string{
	"gateway_image":      "gateway.image",
	"agent_base_image":   "image.base",
	"claude_version":     "claude_code.version",
	"egress_proxy":       "nothing: abox always filters TLS by server name",
	"scoped_dns":         "nothing: abox's resolver always answers only allowlisted names",
	"remote_user":        "agent.uid and agent.gid (by default the agent runs as the workspace owner)",
	"toolchain_versions": "nothing: toolchains come from the base image's package archive",
}

// Parse strictly decodes and validates config.yaml. Fields absent from the file keep their
// defaults. A profiles mapping replaces the default profile; agent_env is merged over the
// defaults, so adding one variable never silently drops the hardening ones (set one to another
// value to override it).
func Parse(data []byte, source string) (*Config, error) {
	c := Default()
	// yaml.v3 decodes a mapping into a non-nil map by adding to it, which would keep the default
	// profile beside the file's own and turn a port the file gives to one of its profiles into
	// a conflict with a profile the user never wrote.
	var set struct {
		Profiles yaml.Node `yaml:"profiles"`
	}
	if yaml.Unmarshal(data, &set) == nil {
		if set.Profiles.Kind != 0 {
			c.Profiles = nil
		}
	}
	if err := decodeStrict(data, source, c); err != nil {
		return nil, err
	}
	if c.AgentEnv == nil {
		// "agent_env:" with no value decodes as null, which would drop the defaults that
		// "agent_env: {}" keeps.
		c.AgentEnv = DefaultAgentEnv()
	}
	// An empty rtk version or source ("version: ''", or a bare tag) means the default, as when
	// the key is absent: an empty version would render a download URL with no version in it.
	c.RTK.Version = cmp.Or(c.RTK.Version, DefaultRTKVersion)
	c.RTK.Source = cmp.Or(c.RTK.Source, SourceNative)
	if err := c.Validate(source); err != nil {
		return nil, err
	}
	return c, nil
}

// Load reads config.yaml at path. A missing file yields [Default].
func Load(path string) (*Config, error) {
	data, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Marshal encodes c as config.yaml.
func (c *Config) Marshal() []byte {
	var buf bytes.Buffer
	buf.WriteString("# abox global configuration. Unknown keys are refused.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		panic(err) // plain data: cannot fail
	}
	enc.Close()
	return buf.Bytes()
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxSize)
	}
	return data, nil
}

// decodeStrict decodes one YAML document into v, refusing unknown keys, null keys and further
// documents, and reports problems in the manifest's located form.
func decodeStrict(data []byte, source string, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return located(source, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return &manifest.Error{Source: source, Problems: []manifest.Problem{{Loc: "file", Msg: "holds more than one YAML document"}}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err == nil {
		if ps := manifest.NullKeys(&doc); len(ps) > 0 {
			return &manifest.Error{Source: source, Problems: ps}
		}
	}
	return nil
}

func located(source string, err error) error {
	var te *yaml.TypeError
	msgs := []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	e := &manifest.Error{Source: source}
	for _, msg := range msgs {
		p := manifest.Problem{Loc: "file", Msg: msg}
		if loc, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(loc, "line ") {
			p.Loc, p.Msg = loc, rest
		}
		if f, ok := strings.CutPrefix(p.Msg, "field "); ok {
			if name, _, ok := strings.Cut(f, " not found in type"); ok {
				p.Msg = fmt.Sprintf("%q is not a known key", name)
				p.Hint = "check the spelling against the configuration reference in README.md"
				if to, ok := renamed[name]; ok {
					p.Hint = fmt.Sprintf("%q was replaced by %s", name, to)
				}
			}
		}
		p.Msg = termtext.Line(p.Msg) // the decoder quotes keys and values verbatim
		e.Problems = append(e.Problems, p)
	}
	return e
}
