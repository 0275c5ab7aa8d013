//go:build e2e

package main

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
)

// With -ech-public-name, the HTTPS listener decrypts Encrypted Client Hellos (RFC 9849), as a
// CDN that fronts many sites does: a client that encrypts its hello for another name under the
// key it logs (event "ech-config", the ECHConfigList in base64) is served that inner name, and
// the request's log line says so (ech=true). The key is new at every start.

// echKey returns an ECHConfigList naming publicName (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
// AES-128-GCM, config id 1) and the key that decrypts hellos made with it.
func echKey(publicName string) ([]byte, tls.EncryptedClientHelloKey, error) {
	if publicName == "" || len(publicName) > 255 {
		return nil, tls.EncryptedClientHelloKey{}, fmt.Errorf("-ech-public-name %q is not a name", publicName)
	}
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, tls.EncryptedClientHelloKey{}, err
	}
	pub := priv.PublicKey().Bytes()
	c := []byte{1, 0x00, 0x20} // config_id, kem_id
	c = append(append(c, u16(len(pub))...), pub...)
	c = append(c, 0, 4, 0, 1, 0, 1) // cipher_suites: HKDF-SHA256, AES-128-GCM
	c = append(c, 0)                // maximum_name_length
	c = append(append(c, byte(len(publicName))), publicName...)
	c = append(c, 0, 0) // extensions
	config := append(append(u16(0xfe0d), u16(len(c))...), c...)
	list := append(u16(len(config)), config...)
	return list, tls.EncryptedClientHelloKey{Config: config, PrivateKey: priv.Bytes(), SendAsRetry: true}, nil
}

func u16(n int) []byte { return []byte{byte(n >> 8), byte(n)} }

// setupECH makes the HTTPS listener decrypt hellos under a new key for publicName, and logs
// the config clients need.
func (s *server) setupECH(publicName string) error {
	list, key, err := echKey(publicName)
	if err != nil {
		return err
	}
	s.echKeys = []tls.EncryptedClientHelloKey{key}
	s.log.Info("ech-config", "public_name", publicName, "config_list", base64.StdEncoding.EncodeToString(list))
	return nil
}
