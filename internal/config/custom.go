package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aboxhq/abox/internal/manifest"
)

// CustomServer is an MCP server outside the Docker catalog, run by the gateway from an image.
type CustomServer struct {
	Image       string            `yaml:"image"`
	Pin         *bool             `yaml:"pin,omitempty"`     // default true: the image must carry a digest
	Network     string            `yaml:"network,omitempty"` // shared (default) or none
	Secrets     []CustomSecret    `yaml:"secrets,omitempty"`
	Tools       []string          `yaml:"tools,omitempty"` // empty or ["*"]: all
	Description string            `yaml:"description,omitempty"`
	Env         map[string]string `yaml:"env,omitempty"`
	Command     []string          `yaml:"command,omitempty"`
	Volumes     []string          `yaml:"volumes,omitempty"`
}

// Pinned reports whether the server's image must be digest-pinned (pin is not false).
func (s CustomServer) Pinned() bool { return s.Pin == nil || *s.Pin }

// CustomSecret is a secret a custom server reads from an environment variable. In YAML it is
// {name, env} or a bare secret name, whose variable is derived: some.token → SOME_TOKEN.
type CustomSecret struct {
	Name string `yaml:"name"`
	Env  string `yaml:"env"`
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]+`)

// UnmarshalYAML accepts the bare-name form.
func (s *CustomSecret) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.Name = n.Value
		s.Env = strings.Trim(strings.ToUpper(nonAlnum.ReplaceAllString(n.Value, "_")), "_")
		return nil
	}
	// Node.Decode does not honour the caller's KnownFields, so unknown keys are refused here, in
	// the decoder's own words so that they are located and hinted like any other.
	if n.Kind == yaml.MappingNode {
		var unknown []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Value != "name" && k.Value != "env" {
				unknown = append(unknown, fmt.Sprintf("line %d: field %s not found in type config.CustomSecret", k.Line, k.Value))
			}
		}
		if len(unknown) > 0 {
			return &yaml.TypeError{Errors: unknown}
		}
	}
	type plain CustomSecret
	return n.Decode((*plain)(s))
}

// CustomServers is custom-servers.yaml, keyed by server name.
type CustomServers map[string]CustomServer

// ParseCustomServers decodes custom-servers.yaml, either a bare name → server mapping or one
// under a top-level servers: key, and validates it.
func ParseCustomServers(data []byte, source string) (CustomServers, error) {
	var out CustomServers
	if underServersKey(data) {
		var wrapped struct {
			Servers CustomServers `yaml:"servers"`
		}
		if err := decodeStrict(data, source, &wrapped); err != nil {
			return nil, err
		}
		out = wrapped.Servers
	} else if err := decodeStrict(data, source, &out); err != nil {
		return nil, err
	}
	if err := out.Validate(source); err != nil {
		return nil, err
	}
	return out, nil
}

// underServersKey reports whether data has the servers: shape: a mapping whose only key is
// servers, holding a mapping of servers or nothing. A bare mapping with one server that happens
// to be named servers holds that server's image instead. The shape is settled before decoding
// so that problems are reported against the shape the file has.
func underServersKey(data []byte) bool {
	var top map[string]yaml.Node
	if yaml.Unmarshal(data, &top) != nil || len(top) != 1 {
		return false
	}
	s, ok := top["servers"]
	switch {
	case !ok:
		return false
	case s.Kind == yaml.ScalarNode:
		return s.ShortTag() == "!!null"
	case s.Kind != yaml.MappingNode:
		return false
	}
	for i := 0; i+1 < len(s.Content); i += 2 {
		if s.Content[i].Value == "image" {
			return false
		}
	}
	return true
}

// LoadCustomServers reads custom-servers.yaml at path; a missing file is empty.
func LoadCustomServers(path string) (CustomServers, error) {
	data, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return CustomServers{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseCustomServers(data, path)
}

// Validate checks every server.
func (cs CustomServers) Validate(source string) error {
	var k checker
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		k.customServer(manifest.KeyLoc("servers", name), name, cs[name])
	}
	if len(k.problems) == 0 {
		return nil
	}
	return &manifest.Error{Source: source, Problems: k.problems}
}

func (k *checker) customServer(loc, name string, s CustomServer) {
	if !manifest.IsServerName(name) {
		k.add(loc, "", "%q is not a valid server name", name)
	}
	switch {
	case !IsImageRef(s.Image):
		k.add(loc+".image", "", "%q is not an image reference", s.Image)
	case s.Pinned() && !IsPinned(s.Image):
		k.add(loc+".image", "pin it as repo@sha256:<digest>, or set pin: false for a local image", "%q is not digest-pinned", s.Image)
	}
	if s.Network != "" && s.Network != "shared" && s.Network != "none" {
		k.add(loc+".network", "", "%q is not one of shared, none", s.Network)
	}
	for i, sec := range s.Secrets {
		l := fmt.Sprintf("%s.secrets[%d]", loc, i)
		if !manifest.IsSecretName(sec.Name) {
			k.add(l+".name", "", "%q is not a valid secret name", sec.Name)
		}
		if !manifest.IsEnvName(sec.Env) {
			k.add(l+".env", "", "%q is not a valid environment variable name", sec.Env)
		}
	}
	for i, t := range s.Tools {
		if t != "*" && !manifest.IsToolName(t) {
			k.add(fmt.Sprintf("%s.tools[%d]", loc, i), "", "%q is not a valid tool name", t)
		}
	}
	for _, e := range slices.Sorted(maps.Keys(s.Env)) {
		l := manifest.KeyLoc(loc+".env", e)
		if !manifest.IsEnvName(e) {
			k.add(l, "", "%q is not a valid environment variable name", e)
		}
		if err := manifest.CheckText(s.Env[e], 4096); err != nil {
			k.add(l, "", "%v", err)
		}
	}
	for i, a := range append(append([]string{}, s.Command...), s.Volumes...) {
		if err := manifest.CheckText(a, 4096); err != nil {
			k.add(fmt.Sprintf("%s.command/volumes[%d]", loc, i), "", "%v", err)
		}
	}
	if err := manifest.CheckText(s.Description, 500); err != nil {
		k.add(loc+".description", "", "%v", err)
	}
}
