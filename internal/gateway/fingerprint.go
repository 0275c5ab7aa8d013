package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aboxhq/abox/internal/statefs"
)

// Fingerprint is every input of the gateway container. A running gateway whose fingerprint
// differs from the one computed now is recreated; it is stored in fingerprint.json and, as
// [Fingerprint.Sum], in the container's abox.fingerprint label.
//
// It holds the token's hash, not the token: a rotated token must recreate the gateway, or the
// old one would answer every netd with 401. It holds the secrets file's salted digest, never a
// bare hash of it: a changed secret must recreate the gateway (it reads the file once, at
// start), and a bare hash of a weak value would be a verifier for guessing it offline.
type Fingerprint struct {
	Image       string   `json:"image"`
	Servers     []string `json:"servers"`
	Tools       []string `json:"tools"`
	CatalogSHA  string   `json:"catalog_sha256"`
	Network     string   `json:"network"`
	NetworkNone []string `json:"network_none"`
	Port        int      `json:"port"`
	TokenSHA    string   `json:"token_sha256"`
	Secrets     string   `json:"secrets_digest"`
	// ServerLife is how long a server's container lives: [ServerLife]. A gateway started before
	// abox ran its servers long-lived has none, and is recreated.
	ServerLife string `json:"server_life"`
}

// Sum is a short digest of the fingerprint, for the container label.
func (f Fingerprint) Sum() string {
	sum := sha256.Sum256(f.marshal())
	return hex.EncodeToString(sum[:])[:16]
}

func (f Fingerprint) marshal() []byte {
	norm := f
	for _, l := range []*[]string{&norm.Servers, &norm.Tools, &norm.NetworkNone} {
		if *l == nil {
			*l = []string{}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(norm); err != nil {
		panic(err) // plain data
	}
	return buf.Bytes()
}

// Diff names the fields in which f and g differ, for the message that says why the gateway is
// recreated.
func (f Fingerprint) Diff(g Fingerprint) []string {
	var out []string
	add := func(differ bool, name string) {
		if differ {
			out = append(out, name)
		}
	}
	eq := func(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
	add(f.Image != g.Image, "image")
	add(!eq(f.Servers, g.Servers), "servers")
	add(!eq(f.Tools, g.Tools), "tools")
	add(f.CatalogSHA != g.CatalogSHA, "catalog")
	add(f.Network != g.Network, "network")
	add(!eq(f.NetworkNone, g.NetworkNone), "server_network")
	add(f.Port != g.Port, "port")
	add(f.TokenSHA != g.TokenSHA, "token")
	add(f.Secrets != g.Secrets, "secrets")
	add(f.ServerLife != g.ServerLife, "server lifetime")
	return out
}

// LoadFingerprint reads fingerprint.json from a profile's state directory; ok is false when it
// does not exist.
func LoadFingerprint(dir string) (f Fingerprint, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, FingerprintFile))
	if errors.Is(err, fs.ErrNotExist) {
		return f, false, nil
	}
	if err != nil {
		return f, false, fmt.Errorf("reading the gateway fingerprint: %w", err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, false, fmt.Errorf("reading the gateway fingerprint %s: %w", filepath.Join(dir, FingerprintFile), err)
	}
	return f, true, nil
}

// Save writes fingerprint.json atomically, 0600.
func (f Fingerprint) Save(dir string) error {
	return statefs.WriteFile(filepath.Join(dir, FingerprintFile), f.marshal(), statefs.PrivateMode)
}
