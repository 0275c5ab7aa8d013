// Package gateway manages the per-profile MCP gateway: its bearer token, the registry of
// projects bound to a profile, the union catalog and the container's lifecycle.
//
// The token authenticates netd's forwarder to the gateway. The agent never holds it: mcp.json
// points at netd, and only netd's root process reads the token file, which is mounted into netd
// alone. It never appears in an argv, an error message or a log line.
package gateway

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aboxhq/abox/internal/statefs"
)

// TokenFile is the token's file name inside a profile's state directory.
const TokenFile = "token"

// EnsureToken mints the profile's token in dir if it does not exist yet: 32 random bytes,
// URL-safe base64, in a 0600 file.
func EnsureToken(dir string) error {
	path := filepath.Join(dir, TokenFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking the gateway token: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("minting the gateway token: %w", err)
	}
	return statefs.WriteFile(path, []byte(base64.RawURLEncoding.EncodeToString(b)+"\n"), statefs.PrivateMode)
}

// ReadToken returns the profile's token.
func ReadToken(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, TokenFile))
	if err != nil {
		return "", fmt.Errorf("reading the gateway token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
