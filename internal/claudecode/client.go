package claudecode

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"time"
)

// NewClient is the HTTP client of a [Fetcher]: the system's roots plus extraPEM (the
// image.ca_certificates, for hosts behind a TLS-intercepting proxy), the proxy of the
// environment (HTTPS_PROXY, NO_PROXY), and no redirect away from https.
func NewClient(extraPEM [][]byte) (*http.Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	for _, pem := range extraPEM {
		if !roots.AppendCertsFromPEM(pem) {
			return nil, errors.New("a CA certificate file holds no PEM certificate")
		}
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{Transport: tr, CheckRedirect: httpsOnly}, nil
}

// httpsOnly follows at most ten redirects, each to https: a release is never read in clear.
func httpsOnly(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != "https" {
		return errors.New("refusing a redirect to " + req.URL.Scheme + "://" + req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("more than ten redirects")
	}
	return nil
}
