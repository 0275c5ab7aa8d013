package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCredentialFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("good", "sk-ant-api03-x\n", 0o600)
	write("open", "sk-ant-api03-x\n", 0o644)
	write("empty", "", 0o600)
	write("spaced", "sk-ant-api03-x X-Evil: 1\n", 0o600)
	write("blank", " \n\n", 0o600)
	write("huge", strings.Repeat("k", 4097), 0o600)
	if err := os.Symlink(filepath.Join(dir, "good"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if p, err := CredentialFile(dir, "good"); err != nil || p != filepath.Join(dir, "good") {
		t.Errorf("good = %q, %v", p, err)
	}
	for name, want := range map[string]string{
		"missing": "does not exist", "empty": "is empty", "open": "mode 0644", "link": "not a regular file",
		"adir": "not a regular file", "../etc": "not a valid secret name",
		"spaced": "not one line of printable ASCII", "blank": "not one line of printable ASCII", "huge": "not one line of printable ASCII",
	} {
		_, err := CredentialFile(dir, name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		if (name == "missing" || name == "empty") != errors.Is(err, ErrCredentialMissing) {
			t.Errorf("%s: errors.Is(ErrCredentialMissing) wrong for %v", name, err)
		}
	}
}
