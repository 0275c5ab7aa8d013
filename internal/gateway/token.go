package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

// TokenSHA256 is the hex sha256 of a token, recorded in the fingerprint so that a rotated token
// recreates the gateway. The token holds 256 random bits, so its hash reveals nothing usable.
func TokenSHA256(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
