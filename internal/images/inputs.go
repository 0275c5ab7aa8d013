package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

// Probe is what image building asks of the host's tools. hostprobe.System runs them.
type Probe interface {
	// NPMRegistry returns the registry the host's npm uses; an error means npm is absent.
	NPMRegistry(ctx context.Context) (string, error)
}

// probeTimeout bounds one question to a host tool; it starts when the question is asked.
const probeTimeout = 20 * time.Second

// CACert is one image.ca_certificates file, read.
type CACert struct {
	Name string // in the build context's ca/ directory: <n>-<basename>.crt
	Path string // the file, ~ expanded
	Data []byte
}

// CACerts reads the image.ca_certificates files, which must be PEM certificates.
func CACerts(files []string, home string) ([]CACert, error) {
	var out []CACert
	for i, f := range files {
		path := paths.ExpandHome(f, home)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, errorf("fix image.ca_certificates in config.yaml", "reading CA certificate %s: %v", path, err)
		}
		if !strings.Contains(string(data), "-----BEGIN CERTIFICATE-----") {
			return nil, errorf("list PEM certificate files only", "%s is not a PEM certificate", path)
		}
		base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		out = append(out, CACert{Name: fmt.Sprintf("%02d-%s.crt", i, sanitizeName(base)), Path: path, Data: data})
	}
	return out, nil
}

// Inputs are what the rendered Dockerfiles take from image building's inputs.
type Inputs struct {
	CACerts     []render.File // the staged CA certificates, by content hash (they name the image)
	NPMRegistry string        // for claude_code.source npm: the host npm's registry; "" for npm's default
}

// RenderInputs reads the CA certificates and, for Claude Code from npm, asks probe for the
// host's npm registry, so that the image honours the mirror the host uses. Without npm on the
// host, the image uses npm's default. Whether the registry is a URL the Dockerfile may carry is
// render's check.
func RenderInputs(ctx context.Context, cfg *config.Config, home string, probe Probe) (Inputs, error) {
	var in Inputs
	certs, err := CACerts(cfg.Image.CACertificates, home)
	if err != nil {
		return in, err
	}
	for _, c := range certs {
		in.CACerts = append(in.CACerts, render.File{Name: c.Name, SHA256: render.SHA256(c.Data)})
	}
	if cfg.ClaudeCode.Source == config.SourceNPM && probe != nil {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		if reg, err := probe.NPMRegistry(ctx); err == nil {
			in.NPMRegistry = strings.TrimSpace(reg)
		}
	}
	return in, nil
}

// sanitizeName keeps [A-Za-z0-9._-] of s.
func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}
