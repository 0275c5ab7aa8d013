//go:build e2e

package harness

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"sync"
)

// ReleaseServer stands in for Claude Code's release host: HTTPS with a certificate of the test
// CA for 127.0.0.1, serving whatever files a test puts at paths laid out as the official host
// lays them out (<version>/manifest.json, <version>/<platform>/claude). abox downloads native
// releases on the host, not in a container, so the stand-in listens on the host's loopback;
// [H.DefaultConfig] already trusts the test CA through image.ca_certificates.
type ReleaseServer struct {
	URL string // the base URL, for claude_code.release_url

	srv      *httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	requests map[string]int
}

// ReleaseServer starts a release stand-in for the test; it stops when the test ends.
func (h *H) ReleaseServer() *ReleaseServer {
	h.T.Helper()
	cert, err := CA(h.T).Issue("127.0.0.1")
	if err != nil {
		h.T.Fatal(err)
	}
	rs := &ReleaseServer{files: map[string][]byte{}, requests: map[string]int{}}
	rs.srv = httptest.NewUnstartedServer(http.HandlerFunc(rs.serve))
	rs.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	rs.srv.StartTLS()
	h.T.Cleanup(rs.srv.Close)
	rs.URL = rs.srv.URL + "/claude-code-releases"
	return rs
}

// Put serves data at path, relative to the base URL.
func (rs *ReleaseServer) Put(path string, data []byte) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.files["/claude-code-releases/"+path] = data
}

// Requests counts the requests for path, relative to the base URL.
func (rs *ReleaseServer) Requests(path string) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.requests["/claude-code-releases/"+path]
}

func (rs *ReleaseServer) serve(w http.ResponseWriter, r *http.Request) {
	rs.mu.Lock()
	rs.requests[r.URL.Path]++
	data, ok := rs.files[r.URL.Path]
	rs.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}
