package claudecode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const version = "2.1.332"

// releaseServer is a fake release host with the official layout: <base>/<version>/manifest.json
// and <base>/<version>/<platform>/claude. It counts the requests of each path.
type releaseServer struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	requests map[string]int
}

func newReleaseServer(t *testing.T) *releaseServer {
	t.Helper()
	s := &releaseServer{files: map[string][]byte{}, requests: map[string]int{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.URL.Path]++
		data, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *releaseServer) put(path string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files["/releases/"+path] = data
}

func (s *releaseServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests["/releases/"+path]
}

// publish serves binary as version's linux-x64 build with a manifest naming checksum (the
// binary's own when "") and size (the binary's own when -1).
func (s *releaseServer) publish(binary []byte, checksum string, size int64) {
	if checksum == "" {
		checksum = sum(binary)
	}
	if size == -1 {
		size = int64(len(binary))
	}
	s.put(version+"/manifest.json", fmt.Appendf(nil, `{"version": %q, "buildDate": "2026-11-24T22:00:00Z", "platforms": {
		"linux-x64": {"binary": "claude", "checksum": %q, "size": %d},
		"linux-arm64": {"binary": "claude", "checksum": "%s", "size": 1}}}`, version, checksum, size, strings.Repeat("0", 64)))
	s.put(version+"/linux-x64/claude", binary)
}

func (s *releaseServer) fetcher(t *testing.T) *Fetcher {
	return &Fetcher{Client: s.Client(), BaseURL: s.URL + "/releases", Cache: t.TempDir(),
		Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }}
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

var binary = []byte("#!/bin/sh\necho claude\n")

// TestFetchVerifiesAgainstTheManifest: the binary comes with the manifest's checksum, is kept
// with a record of it, and the next fetch of the same version uses the cache without the
// network.
func TestFetchVerifiesAgainstTheManifest(t *testing.T) {
	s := newReleaseServer(t)
	s.publish(binary, "", -1)
	f := s.fetcher(t)
	r, err := f.Fetch(context.Background(), version, "linux-x64", "")
	if err != nil {
		t.Fatalf("Fetch = %v", err)
	}
	want := &Release{Version: version, Platform: "linux-x64", SHA256: sum(binary), Size: int64(len(binary)),
		BuildDate: time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC), Source: s.URL + "/releases/" + version + "/linux-x64/claude",
		Fetched: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Path: filepath.Join(f.Cache, version, "linux-x64", "claude")}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Fetch (-want +got):\n%s", diff)
	}
	if got, _ := os.ReadFile(r.Path); string(got) != string(binary) {
		t.Errorf("cached binary = %q", got)
	}
	rec, err := LoadRecord(f.Cache, version, "linux-x64")
	if err != nil || rec == nil || rec.SHA256 != sum(binary) || !rec.BuildDate.Equal(want.BuildDate) {
		t.Errorf("LoadRecord = %+v, %v", rec, err)
	}

	again, err := f.Fetch(context.Background(), version, "linux-x64", "")
	if err != nil || again.SHA256 != r.SHA256 {
		t.Fatalf("second Fetch = %+v, %v", again, err)
	}
	if n, m := s.count(version+"/linux-x64/claude"), s.count(version+"/manifest.json"); n != 1 || m != 1 {
		t.Errorf("binary fetched %d times, manifest %d times; want once each (the cache serves the second)", n, m)
	}
}

// TestFetchRefuses: every way a release host can send something other than what the manifest
// vouches for, or a manifest that vouches for something else, fails, names what it saw, and
// leaves nothing in the cache.
func TestFetchRefuses(t *testing.T) {
	other := []byte("a different binary\n")
	cases := []struct {
		name    string
		setup   func(s *releaseServer)
		pinned  string
		wantErr string
		errType func(error) bool
	}{
		{"tampered binary", func(s *releaseServer) { s.publish(binary, sum(other), -1) }, "",
			"has sha256 " + sum(binary) + ", but the release manifest says " + sum(other), isA[*MismatchError]},
		{"longer than the manifest says", func(s *releaseServer) {
			s.publish(binary, "", 4)
		}, "", "sent 5 bytes, but the release manifest says 4", isA[*MismatchError]},
		{"pinned sha256 wins and refuses", func(s *releaseServer) { s.publish(binary, "", -1) }, sum(other),
			"but claude_code.sha256 says " + sum(other), isA[*MismatchError]},
		{"manifest of another version", func(s *releaseServer) {
			s.publish(binary, "", -1)
			s.put(version+"/manifest.json", []byte(`{"version": "2.1.0", "platforms": {}}`))
		}, "", `the manifest is for version "2.1.0", not ` + version, isA[*ManifestError]},
		{"no entry for the platform", func(s *releaseServer) {
			s.put(version+"/manifest.json", fmt.Appendf(nil, `{"version": %q, "platforms": {"darwin-arm64": {}, "linux-x64-musl": {}}}`, version))
		}, "", "lists no linux-x64 build (it lists darwin-arm64, linux-x64-musl)", isA[*ManifestError]},
		{"checksum not hex", func(s *releaseServer) { s.publish(binary, strings.ToUpper(sum(binary)), -1) }, "",
			"checksum", isA[*ManifestError]},
		{"another binary name", func(s *releaseServer) {
			s.put(version+"/manifest.json", fmt.Appendf(nil, `{"version": %q, "platforms": {"linux-x64": {"binary": "../sh", "checksum": %q}}}`, version, sum(binary)))
		}, "", `binary is "../sh", not claude`, isA[*ManifestError]},
		{"manifest not JSON", func(s *releaseServer) { s.put(version+"/manifest.json", []byte("<html>blocked</html>")) }, "",
			"the manifest is not JSON", isA[*ManifestError]},
		{"manifest missing", func(s *releaseServer) {}, "", version + "/manifest.json: HTTP 404", isA[*FetchError]},
		{"manifest too large", func(s *releaseServer) { s.put(version+"/manifest.json", make([]byte, maxManifest+1)) }, "",
			"more than 1048576 bytes", isA[*FetchError]},
		{"binary missing", func(s *releaseServer) {
			s.publish(binary, "", -1)
			delete(s.files, "/releases/"+version+"/linux-x64/claude")
		}, "", "linux-x64/claude: HTTP 404", isA[*FetchError]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newReleaseServer(t)
			tc.setup(s)
			f := s.fetcher(t)
			r, err := f.Fetch(context.Background(), version, "linux-x64", tc.pinned)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !tc.errType(err) {
				t.Fatalf("Fetch = %+v, %v; want the right error type containing %q", r, err, tc.wantErr)
			}
			if left, _ := filepath.Glob(filepath.Join(f.Cache, version, "linux-x64", "*")); len(left) > 0 {
				t.Errorf("left in the cache: %v", left)
			}
		})
	}
}

// isA reports whether err is, or wraps, an E.
func isA[E error](err error) bool {
	var e E
	return errors.As(err, &e)
}

// TestFetchPinned: with a sha256 from config.yaml the manifest is never read, so a mirror needs
// only the binaries; the pin also decides what the cache may serve.
func TestFetchPinned(t *testing.T) {
	s := newReleaseServer(t)
	s.publish(binary, sum([]byte("what the manifest says")), -1)
	f := s.fetcher(t)
	r, err := f.Fetch(context.Background(), version, "linux-x64", sum(binary))
	if err != nil || !r.Pinned || r.SHA256 != sum(binary) {
		t.Fatalf("Fetch pinned = %+v, %v", r, err)
	}
	if n := s.count(version + "/manifest.json"); n != 0 {
		t.Errorf("the manifest was read %d times with a pinned sha256", n)
	}
	// Unpinning makes the manifest decide again: its checksum is not the cached binary's.
	if _, err := f.Fetch(context.Background(), version, "linux-x64", ""); !errors.As(err, new(*MismatchError)) {
		t.Errorf("Fetch unpinned after a pinned one = %v, want the manifest's mismatch", err)
	}
}

// TestFetchCacheIsRechecked: a cached binary that no longer hashes to its record is downloaded
// again; a record whose binary is gone holds the manifest to what it said before.
func TestFetchCacheIsRechecked(t *testing.T) {
	s := newReleaseServer(t)
	s.publish(binary, "", -1)
	f := s.fetcher(t)
	r, err := f.Fetch(context.Background(), version, "linux-x64", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.Path, []byte("planted"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(context.Background(), version, "linux-x64", ""); err != nil {
		t.Fatalf("Fetch over a changed cache = %v", err)
	}
	if got, _ := os.ReadFile(r.Path); string(got) != string(binary) || s.count(version+"/linux-x64/claude") != 2 {
		t.Errorf("the changed cached binary was not replaced by a verified download: %q", got)
	}

	if err := os.Remove(r.Path); err != nil {
		t.Fatal(err)
	}
	s.publish([]byte("a re-published 2.1.332\n"), "", -1)
	_, err = f.Fetch(context.Background(), version, "linux-x64", "")
	var changed *ChangedError
	if !errors.As(err, &changed) || changed.Before != sum(binary) || !strings.Contains(err.Error(), "a published release does not change") {
		t.Errorf("Fetch of a changed release = %v, want a ChangedError", err)
	}
}

// TestFetchHostUnreachable: a host that does not answer is named, with the URL abox asked for.
func TestFetchHostUnreachable(t *testing.T) {
	s := newReleaseServer(t)
	f := s.fetcher(t)
	s.Close()
	_, err := f.Fetch(context.Background(), version, "linux-x64", "")
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Host() != strings.TrimPrefix(s.URL, "https://") ||
		!strings.HasPrefix(err.Error(), "fetching "+s.URL+"/releases/"+version+"/manifest.json: ") {
		t.Errorf("Fetch from a closed server = %v", err)
	}
	f.BaseURL = "http://" + fe.Host() + "/releases"
	if _, err := f.Fetch(context.Background(), version, "linux-x64", ""); err == nil || !strings.Contains(err.Error(), "is not https") {
		t.Errorf("Fetch over http = %v, want refused", err)
	}
}

// TestClientRefusesRedirectToHTTP: a release is never read in clear, even after a redirect.
func TestClientRefusesRedirectToHTTP(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(binary) }))
	defer plain.Close()
	s := newReleaseServer(t)
	s.Config.Handler = http.RedirectHandler(plain.URL+"/x", http.StatusFound)
	c, err := NewClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Transport.(*http.Transport).TLSClientConfig = s.Client().Transport.(*http.Transport).TLSClientConfig
	f := &Fetcher{Client: c, BaseURL: s.URL, Cache: t.TempDir()}
	if _, err := f.Fetch(context.Background(), version, "linux-x64", ""); err == nil || !strings.Contains(err.Error(), "refusing a redirect to http://") {
		t.Errorf("Fetch redirected to http = %v", err)
	}
}

func TestNewClientRefusesNonPEM(t *testing.T) {
	if _, err := NewClient([][]byte{[]byte("not a certificate")}); err == nil {
		t.Error("NewClient accepted a file with no certificate")
	}
}

func TestPlatformFor(t *testing.T) {
	for goarch, want := range map[string]string{"amd64": "linux-x64", "arm64": "linux-arm64", "386": ""} {
		got, err := PlatformFor(goarch)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("PlatformFor(%q) = %q, %v; want %q", goarch, got, err, want)
		}
	}
}
