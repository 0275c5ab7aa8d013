//go:build e2e

package harness

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigMarshal(t *testing.T) {
	c := Config{
		Network:    "abox-e2e-x",
		Image:      ImageConfig{Base: "sha256:abc", CACertificates: []string{"/ca.crt"}},
		ClaudeCode: ClaudeCodeConfig{Source: "file", Path: "/bin/claude", SHA256: "ff", Version: "2.1.0"},
		Gateway:    GatewayConfig{Image: "sha256:def"},
		Profiles:   map[string]Profile{"e2e1": {Port: 8811}},
		Extra:      map[string]any{"limits": map[string]any{"pids": 256}},
	}
	got, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := `network: abox-e2e-x
image:
    base: sha256:abc
    ca_certificates:
        - /ca.crt
claude_code:
    source: file
    path: /bin/claude
    sha256: ff
    version: 2.1.0
gateway:
    image: sha256:def
profiles:
    e2e1:
        port: 8811
limits:
    pids: 256
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Marshal() mismatch (-want +got):\n%s", diff)
	}
	if got, _ := (Config{Network: "net"}).Marshal(); string(got) != "network: net\n" {
		t.Errorf("empty sections are written: %q", got)
	}
}

func TestWriteConfigModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "abox")
	p, err := writeConfig(dir, Config{Network: "n"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, p: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("mode of %s = %v, want %v", path, got, want)
		}
	}
}

func TestAlive(t *testing.T) {
	if !alive(strconv.Itoa(os.Getpid())) {
		t.Error("alive(this test binary) = false")
	}
	for _, pid := range []string{"", "x", "1", "999999999"} {
		if alive(pid) {
			t.Errorf("alive(%q) = true", pid)
		}
	}
}

func TestLinesAndDedupe(t *testing.T) {
	if got := lines(" a \n\n b\n"); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("lines = %q", got)
	}
	if got := dedupe([]string{"a", "b", "a"}); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("dedupe = %q", got)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "e2e", "setup.sh")); err != nil {
		t.Errorf("repoRoot() = %s, which has no e2e/setup.sh", root)
	}
}
