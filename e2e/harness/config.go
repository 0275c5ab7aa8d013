//go:build e2e

package harness

import (
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// Config is the part of abox's config.yaml the tests set. Keys the harness does not model go
// in Extra, which is written inline at the top level.
type Config struct {
	Network    string             `yaml:"network,omitempty"`
	Image      ImageConfig        `yaml:"image,omitempty"`
	ClaudeCode ClaudeCodeConfig   `yaml:"claude_code,omitempty"`
	Gateway    GatewayConfig      `yaml:"gateway,omitempty"`
	Profiles   map[string]Profile `yaml:"profiles,omitempty"`
	Extra      map[string]any     `yaml:",inline"`
}

// ImageConfig is config.yaml's image section.
type ImageConfig struct {
	Base           string   `yaml:"base,omitempty"` // a local image id sha256:… or a digest reference
	CACertificates []string `yaml:"ca_certificates,omitempty"`
}

// ClaudeCodeConfig is config.yaml's claude_code section.
type ClaudeCodeConfig struct {
	Source  string `yaml:"source,omitempty"` // native, npm or file
	Path    string `yaml:"path,omitempty"`
	SHA256  string `yaml:"sha256,omitempty"`
	Version string `yaml:"version,omitempty"`
	// Credential names the secret netd injects (injected-credential mode).
	Credential string `yaml:"credential,omitempty"`
	// ReleaseURL is the base URL of native releases (see [H.ReleaseServer]).
	ReleaseURL string `yaml:"release_url,omitempty"`
}

// GatewayConfig is config.yaml's gateway section.
type GatewayConfig struct {
	Image string `yaml:"image,omitempty"`
}

// Profile is one gateway profile.
type Profile struct {
	Port int `yaml:"port"`
}

// Marshal renders c as YAML.
func (c Config) Marshal() ([]byte, error) { return yaml.Marshal(c) }

// writeConfig writes c to dir/config.yaml with abox's modes (0700 directory, 0600 file).
func writeConfig(dir string, c Config) (string, error) {
	data, err := c.Marshal()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "config.yaml")
	return p, os.WriteFile(p, data, 0o600)
}
