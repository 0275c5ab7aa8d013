package secrets

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/statefs"
)

// DefaultIterations is the PBKDF2 work factor of new digests. Each digest records its own, so
// raising it later leaves older digests comparable.
const DefaultIterations = 100_000

const (
	saltBytes    = 32
	digestPrefix = "pbkdf2-sha256"
)

// Digester computes salted digests for drift detection. Its salt is random per installation, so
// a digest is useless without secrets.salt and no precomputed table applies; the work factor
// slows a guesser who has both files.
type Digester struct {
	salt       []byte
	iterations int
}

// NewDigester returns a Digester with salt and a work factor (DefaultIterations when 0).
func NewDigester(salt []byte, iterations int) *Digester {
	if iterations <= 0 {
		iterations = DefaultIterations
	}
	return &Digester{salt: salt, iterations: iterations}
}

// Digest returns "pbkdf2-sha256$<iterations>$<hex>" of v.
func (d *Digester) Digest(v []byte) string {
	return d.digest(v, d.iterations)
}

func (d *Digester) digest(v []byte, iterations int) string {
	key, err := pbkdf2.Key(sha256.New, string(v), d.salt, iterations, 32)
	if err != nil {
		panic(err) // only for an impossible key length
	}
	return fmt.Sprintf("%s$%d$%s", digestPrefix, iterations, hex.EncodeToString(key))
}

// Matches reports whether digest was computed from v with this salt, at the work factor the
// digest records.
func (d *Digester) Matches(digest string, v []byte) bool {
	parts := strings.Split(digest, "$")
	if len(parts) != 3 || parts[0] != digestPrefix {
		return false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 || n > 10*DefaultIterations {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(d.digest(v, n)), []byte(digest)) == 1
}

// LoadSalt reads secrets.salt, creating it on first use: 32 random bytes as 64 hex digits, 0600.
// Creation never replaces a salt another abox wrote meanwhile: that would turn every recorded
// digest into a false drift.
func LoadSalt(path string) ([]byte, error) {
	salt, err := readSalt(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return salt, err
	}
	b := make([]byte, saltBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("creating the digest salt: %w", err)
	}
	if err := createOnce(path, []byte(hex.EncodeToString(b)+"\n")); err != nil {
		return nil, err
	}
	return readSalt(path)
}

func readSalt(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	salt, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(salt) < 16 {
		return nil, fmt.Errorf("%s is not a salt abox wrote; move it away to start afresh (every secret then shows as drifted until synced)", path)
	}
	return salt, nil
}

// createOnce writes data to path, 0600, unless path exists: the file is written under a
// temporary name and hard-linked into place, which fails if another writer got there first.
func createOnce(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := statefs.MkdirAll(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Chmod(statefs.PrivateMode), tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
