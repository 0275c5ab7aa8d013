//go:build e2e

// Package testca is the certificate authority of the e2e tests.
//
// The test servers (e2e/testsrv) stand in for the internet and present certificates this CA
// signs; the images the tests build trust it. Nothing outside those images trusts it, so its
// key may live in a cache directory next to the tests. Keys are ECDSA P-256 and certificates
// carry DNS and IP subject alternative names, which is what curl, OpenSSL and Go check.
package testca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names of a CA saved with [CA.Save].
const (
	CertFile = "ca.crt" // PEM certificate; the .crt suffix is what update-ca-certificates reads
	KeyFile  = "ca.key" // PEM PKCS#8 private key, mode 0600
)

// CA is a certificate authority that can issue leaf certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// New creates a CA valid for ten years, so a cached one outlives any test run.
func New() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "abox e2e test CA", Organization: []string{"abox e2e"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	return fromDER(der, key)
}

func fromDER(der []byte, key crypto.Signer) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}, nil
}

// Load reads a CA saved by [CA.Save] in dir.
func Load(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading CA from %s: %w", dir, err)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("loading CA from %s: key cannot sign", dir)
	}
	ca, err := fromDER(pair.Certificate[0], key)
	if err != nil {
		return nil, fmt.Errorf("loading CA from %s: %w", dir, err)
	}
	if !ca.Cert.IsCA || time.Now().After(ca.Cert.NotAfter.Add(-24*time.Hour)) {
		return nil, fmt.Errorf("loading CA from %s: not a CA or about to expire", dir)
	}
	return ca, nil
}

// LoadOrCreate loads the CA in dir, creating and saving one if there is none (or it is unusable).
// Concurrent callers end up with the same CA: a new one is written to a temporary directory and
// renamed into place, and a caller that loses the race loads the winner's.
func LoadOrCreate(dir string) (*CA, error) {
	if ca, err := Load(dir); err == nil {
		return ca, nil
	}
	ca, err := New()
	if err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, ".ca-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := ca.Save(tmp); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	// Another process may have saved one meanwhile. An unusable old CA is removed: rename onto
	// a non-empty directory fails.
	if _, err := os.Stat(dir); err == nil {
		if other, err := Load(dir); err == nil {
			return other, nil
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have won the race; its CA is as good as ours.
		if ca, lerr := Load(dir); lerr == nil {
			return ca, nil
		}
		return nil, fmt.Errorf("saving CA: %w", err)
	}
	return ca, nil
}

// Save writes ca.crt (0644) and ca.key (0600) into dir, which must exist.
func (ca *CA) Save(dir string) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, CertFile), ca.CertPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, KeyFile), pemBlock("PRIVATE KEY", keyDER), 0o600)
}

// Pool returns a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue returns a server certificate for names, which may be DNS names (including wildcards
// such as *.example.test) or IP addresses. The first name becomes the common name.
func (ca *CA) Issue(names ...string) (tls.Certificate, error) {
	if len(names) == 0 {
		return tls.Certificate{}, errors.New("issuing a certificate: no names")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("issuing a certificate for %v: %w", names, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// WriteLeaf issues a certificate for names and writes <base>.crt (leaf then CA) and <base>.key
// into dir. It returns both paths.
func (ca *CA) WriteLeaf(dir, base string, names ...string) (certPath, keyPath string, err error) {
	c, err := ca.Issue(names...)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return "", "", err
	}
	var chain []byte
	for _, der := range c.Certificate {
		chain = append(chain, pemBlock("CERTIFICATE", der)...)
	}
	certPath = filepath.Join(dir, base+".crt")
	keyPath = filepath.Join(dir, base+".key")
	if err := os.WriteFile(certPath, chain, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, pemBlock("PRIVATE KEY", keyDER), 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
