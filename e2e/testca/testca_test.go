//go:build e2e

package testca

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

func TestIssueVerifies(t *testing.T) {
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.Issue("allowed.test", "*.allowed.test", "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"allowed.test", "api.allowed.test", "10.1.2.3"} {
		opts := x509.VerifyOptions{Roots: ca.Pool(), DNSName: name}
		if _, err := c.Leaf.Verify(opts); err != nil {
			t.Errorf("Verify(%q) = %v, want ok", name, err)
		}
	}
	if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "other.test"}); err == nil {
		t.Error(`Verify("other.test") = ok, want a name mismatch`)
	}
}

func TestLoadOrCreateKeepsTheCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	first, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Cert.Equal(again.Cert) {
		t.Error("LoadOrCreate made a new CA although one was saved")
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("key mode = %v, want 0600", got)
	}
}

func TestLoadOrCreateReplacesAnUnusableCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CertFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir); err != nil {
		t.Fatalf("LoadOrCreate over junk = %v, want a new CA", err)
	}
	if _, err := Load(dir); err != nil {
		t.Errorf("Load after LoadOrCreate = %v", err)
	}
}

func TestWriteLeafServesTLS(t *testing.T) {
	ca, err := New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath, err := ca.WriteLeaf(dir, "srv", "srv.test")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(pair.Certificate) != 2 {
		t.Errorf("chain length = %d, want leaf + CA", len(pair.Certificate))
	}
}
