package secrets

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testIterations keeps digests fast in tests; production uses DefaultIterations.
const testIterations = 1000

func TestDigest(t *testing.T) {
	d := NewDigester([]byte("salt-one-0123456789abcdef"), testIterations)
	a := d.Digest([]byte(fakeValue))
	if a != d.Digest([]byte(fakeValue)) {
		t.Error("the digest is not stable")
	}
	if !strings.HasPrefix(a, "pbkdf2-sha256$1000$") || len(a) != len("pbkdf2-sha256$1000$")+64 {
		t.Errorf("digest %q has not the recorded format", a)
	}
	bare := sha256.Sum256([]byte(fakeValue))
	if strings.Contains(a, hex.EncodeToString(bare[:])) {
		t.Error("the digest is a bare sha256 of the value")
	}
	if strings.Contains(a, fakeValue) {
		t.Error("the digest holds the value")
	}
	if other := NewDigester([]byte("salt-two-0123456789abcdef"), testIterations).Digest([]byte(fakeValue)); other == a {
		t.Error("two salts give one digest")
	}
	if !d.Matches(a, []byte(fakeValue)) || d.Matches(a, []byte("other")) {
		t.Error("Matches is wrong")
	}
	// A digest records its own work factor, so raising the default keeps old ones comparable.
	if !NewDigester([]byte("salt-one-0123456789abcdef"), 0).Matches(a, []byte(fakeValue)) {
		t.Error("a digest made at another work factor no longer matches")
	}
	for _, bad := range []string{"", "sha256$1$aa", "pbkdf2-sha256$x$aa", "pbkdf2-sha256$99999999999$aa"} {
		if d.Matches(bad, []byte(fakeValue)) {
			t.Errorf("Matches(%q) is true", bad)
		}
	}
}

// BenchmarkDigest measures one digest at the production work factor, which doctor and check pay
// once per secret (about 30–70 ms on a laptop).
func BenchmarkDigest(b *testing.B) {
	d := NewDigester(make([]byte, 32), 0)
	for b.Loop() {
		d.Digest([]byte(fakeValue))
	}
}

func TestLoadSalt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "secrets.salt")
	a, err := LoadSalt(path)
	if err != nil || len(a) != 32 {
		t.Fatalf("LoadSalt = %x, %v", a, err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("salt mode %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if len(strings.TrimSpace(string(data))) != 64 {
		t.Errorf("salt file %q is not 64 hex digits", data)
	}
	if b, err := LoadSalt(path); err != nil || string(a) != string(b) {
		t.Error("a second load gives another salt")
	}
	if err := os.WriteFile(path, []byte("not hex"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSalt(path); err == nil {
		t.Error("a corrupt salt was accepted")
	}
}

// TestLoadSaltRace: concurrent first uses agree on one salt.
func TestLoadSaltRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.salt")
	var wg sync.WaitGroup
	salts := make([][]byte, 8)
	for i := range salts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			salts[i], _ = LoadSalt(path)
		}()
	}
	wg.Wait()
	for _, s := range salts {
		if string(s) != string(salts[0]) || len(s) != 32 {
			t.Fatalf("salts differ: %x vs %x", s, salts[0])
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	s, err := LoadState(path)
	if err != nil || len(s.Secrets) != 0 {
		t.Fatalf("LoadState of nothing = %v, %v", s, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Secrets["a.b"] = Record{Digest: "pbkdf2-sha256$1$aa", Source: "file", Reference: "~/a", SyncedAt: at}
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	for _, k := range []string{`"secrets"`, `"digest"`, `"source"`, `"reference"`, `"synced_at": "2026-01-02T03:04:05Z"`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("secrets.json lacks %s:\n%s", k, data)
		}
	}
	got, err := LoadState(path)
	if err != nil || got.Secrets["a.b"] != s.Secrets["a.b"] {
		t.Errorf("round trip = %+v, %v", got, err)
	}
}
