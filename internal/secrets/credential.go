package secrets

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aboxhq/abox/internal/policy"
)

// ErrCredentialMissing is a Claude credential (claude_code.credential) that abox's file store
// does not hold: netd would have nothing to inject.
var ErrCredentialMissing = errors.New("the Claude credential is not in abox's secret store")

// CredentialFile returns the file of abox's store (dir) that holds the Claude credential name,
// which netd's container binds in injected mode, after checking what netd relies on: a regular
// file, not a link (a bind follows it wherever it points), private to its owner, not empty.
// Docker Desktop's store gives no file to bind, so the credential must be in abox's own.
func CredentialFile(dir, name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s does not exist", ErrCredentialMissing, path)
	}
	if err != nil {
		return "", err
	}
	switch {
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	case st.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("%s has mode %04o: group or others may read the credential", path, st.Mode().Perm())
	case st.Size() == 0:
		return "", fmt.Errorf("%w: %s is empty", ErrCredentialMissing, path)
	}
	// netd refuses to start with a value it cannot send in a header; say so before it does.
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, policy.MaxCredentialLen+2))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if err := policy.CheckCredential(strings.TrimSpace(string(b))); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return path, nil
}
