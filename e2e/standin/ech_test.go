//go:build e2e

package main

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The ECH probes must work, or an attack test that sees them refused proves nothing: against a
// crypto/tls server that decrypts ECH, as testsrv's -ech-public-name does, each gets the
// inner name served where it should.

// echServer is an HTTPS server on loopback holding an ECH key for cdn.test; it records the
// server name of every hello it chose a certificate for.
type echServer struct {
	addr, config string
	mu           sync.Mutex
	names        []string
}

func (s *echServer) served() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.names)
}

func startECHServer(t *testing.T) *echServer {
	t.Helper()
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := priv.PublicKey().Bytes()
	c := append([]byte{1, 0, 0x20}, be16(len(pub))...)
	c = append(append(c, pub...), 0, 4, 0, 1, 0, 1, 0, 8)
	c = append(append(c, "cdn.test"...), 0, 0)
	config := append(append(be16(0xfe0d), be16(len(c))...), c...)
	s := &echServer{config: base64.StdEncoding.EncodeToString(append(be16(len(config)), config...))}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "sni=%s ech=%v\n", r.TLS.ServerName, r.TLS.ECHAccepted)
	}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13,
		EncryptedClientHelloKeys: []tls.EncryptedClientHelloKey{{Config: config, PrivateKey: priv.Bytes()}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certs := srv.TLS.Certificates
	srv.TLS.Certificates = nil
	srv.TLS.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		s.mu.Lock()
		s.names = append(s.names, hello.ServerName)
		s.mu.Unlock()
		return &certs[0], nil
	}
	s.addr = srv.Listener.Addr().String()
	return s
}

func TestECHProbes(t *testing.T) {
	s := startECHServer(t)
	if res := probeECH([]string{s.addr, s.config, "secret.test"}); res["ok"] != true || res["reply"] != "sni=secret.test ech=true" {
		t.Errorf("ech = %v, want the inner name served", res)
	}
	if res := probeECHHRR([]string{s.addr, "cdn.test", s.config, "secret.test", "first"}); res["ok"] != true || res["reply"] != "server hello" {
		t.Errorf("ech-hrr first = %v, want a server hello", res)
	}
	if got := s.served(); !slices.Equal(got, []string{"secret.test", "secret.test"}) {
		t.Errorf("the server chose certificates for %q, want the inner name both times", got)
	}
	res := probeECHHRR([]string{s.addr, "cdn.test", s.config, "secret.test", "second"})
	if res["ok"] != true || res["reply"] != "after the retry: server hello" {
		t.Errorf("ech-hrr second = %v, want a retry, then a server hello", res)
	}
	// crypto/tls takes ECH only from the first hello (RFC 9849 §7.1.1): the second's is ignored.
	if got := s.served(); got[len(got)-1] != "cdn.test" {
		t.Errorf("after ECH in the second hello only, the server chose a certificate for %q, want cdn.test", got[len(got)-1])
	}
	// Nor does it take another name in the second hello (RFC 8446 §4.1.2): illegal_parameter.
	n := len(s.served())
	res = probeECHHRR([]string{s.addr, "cdn.test", s.config, "secret.test", "rename"})
	if res["ok"] != false || res["error"] != "after the retry: alert 47" || len(s.served()) != n {
		t.Errorf("ech-hrr rename = %v (certificates chosen for %q), want illegal_parameter and none chosen", res, s.served()[n:])
	}
}

// TestECHHelloVariants: every variant's hello is one crypto/tls reads, with its server name and
// the ECH extension, whether in one record or many, in one segment or several; of a pipelined
// pair, it reads the first, without.
func TestECHHelloVariants(t *testing.T) {
	for _, v := range []string{"0xfe0d-outer-last", "fe0d-inner-first", "0xfd00-empty-middle", "0xffce-outer-first", "tls12", "records", "segments", "trickle", "pipelined"} {
		t.Run(v, func(t *testing.T) {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan *tls.ClientHelloInfo, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				tls.Server(c, &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
					got <- chi
					return nil, io.EOF
				}}).Handshake()
			}()
			res := probeECHHello([]string{ln.Addr().String(), "cdn.test", v, "1"})
			select {
			case chi := <-got:
				want := uint16(0xfe0d)
				if p := strings.Split(v, "-"); len(p) == 3 {
					fmt.Sscanf(strings.TrimPrefix(p[0], "0x"), "%x", &want)
				}
				has := slices.Contains(chi.Extensions, want)
				if v == "pipelined" { // the server reads the first hello, without ECH
					has = !has
				}
				if chi.ServerName != "cdn.test" || !has {
					t.Errorf("the server read %q with extensions %x, want cdn.test and %#04x (pipelined: without)", chi.ServerName, chi.Extensions, want)
				}
				if v == "tls12" && slices.Contains(chi.SupportedVersions, tls.VersionTLS13) {
					t.Errorf("tls12 offers TLS 1.3: %x", chi.SupportedVersions)
				}
			case <-time.After(3 * time.Second):
				t.Errorf("the server read no hello; the probe said %v", res)
			}
		})
	}
}
