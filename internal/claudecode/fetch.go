package claudecode

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Release is a verified binary in the cache, and the record (release.json) of what it was
// verified against.
type Release struct {
	Version  string `json:"version"`
	Platform string `json:"platform"`
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
	// Pinned is set when the checksum came from claude_code.sha256, not from the manifest.
	Pinned bool `json:"pinned,omitempty"`
	// BuildDate is the manifest's buildDate; zero when pinned or absent.
	BuildDate time.Time `json:"build_date,omitzero"`
	Source    string    `json:"source"` // the URL the binary came from
	Fetched   time.Time `json:"fetched"`
	// Path is the cached binary.
	Path string `json:"-"`
}

// Host is the host the binary came from.
func (r *Release) Host() string { return host(r.Source) }

// RecordFile is the name of a release's record beside its binary.
const RecordFile = "release.json"

// Dir is where the cache keeps version for platform.
func Dir(cache, version, platform string) string { return filepath.Join(cache, version, platform) }

// LoadRecord reads the record of version for platform in cache; nil with no error when there is
// none.
func LoadRecord(cache, version, platform string) (*Release, error) {
	dir := Dir(cache, version, platform)
	data, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Release
	if err := json.Unmarshal(data, &r); err != nil || r.Version != version || r.Platform != platform || !checksumRe.MatchString(r.SHA256) {
		return nil, fmt.Errorf("%s is not a release record of %s %s", filepath.Join(dir, RecordFile), version, platform)
	}
	r.Path = filepath.Join(dir, "claude")
	return &r, nil
}

// Fetcher downloads releases from BaseURL into the cache directory Cache.
type Fetcher struct {
	Client  *http.Client
	BaseURL string // DefaultBaseURL, or a mirror with the same layout
	Cache   string
	Now     func() time.Time
	// Progress receives one line per download; nil discards them.
	Progress func(format string, args ...any)
}

// Fetch returns a verified binary of version for platform: from the cache when a copy verified
// before still hashes to its record, else downloaded and checked against pinned (a sha256 from
// config.yaml) or, when pinned is "", against the release's manifest.
func (f *Fetcher) Fetch(ctx context.Context, version, platform, pinned string) (*Release, error) {
	if !strings.HasPrefix(f.BaseURL, "https://") {
		return nil, fmt.Errorf("the release URL %q is not https", f.BaseURL)
	}
	prev, err := LoadRecord(f.Cache, version, platform)
	if err != nil {
		return nil, err
	}
	if prev != nil && (pinned == "" && !prev.Pinned || pinned == prev.SHA256) && hashes(prev.Path, prev.SHA256) {
		return prev, nil
	}
	want := &Release{Version: version, Platform: platform, SHA256: pinned, Pinned: pinned != "",
		Source: f.url(version, platform, "claude")}
	if pinned == "" {
		if err := f.fromManifest(ctx, want, prev); err != nil {
			return nil, err
		}
	}
	return f.download(ctx, want)
}

// fromManifest fills r's checksum, size and build date from the release's manifest. prev, the
// record of an earlier download whose binary is gone, must agree with it.
func (f *Fetcher) fromManifest(ctx context.Context, r *Release, prev *Release) error {
	u := f.url(r.Version, "manifest.json")
	data, err := f.get(ctx, u, maxManifest)
	if err != nil {
		return err
	}
	p, built, err := ParseManifest(data, r.Version, r.Platform)
	if err != nil {
		return &ManifestError{URL: u, Err: err}
	}
	if prev != nil && !prev.Pinned && prev.SHA256 != p.Checksum {
		return &ChangedError{URL: u, Platform: r.Platform, Before: prev.SHA256, Now: p.Checksum,
			Record: filepath.Join(Dir(f.Cache, r.Version, r.Platform), RecordFile)}
	}
	r.SHA256, r.Size, r.BuildDate = p.Checksum, p.Size, built
	return nil
}

// download fetches r.Source into the cache and keeps it only if its sha256 (and size, when
// known) is r's.
func (f *Fetcher) download(ctx context.Context, r *Release) (*Release, error) {
	dir := Dir(f.Cache, r.Version, r.Platform)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".claude-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	f.progressf("downloading Claude Code %s for %s from %s", r.Version, r.Platform, host(r.Source))
	sum, n, err := f.copyTo(ctx, tmp, r.Source, r.Size)
	if err := errors.Join(err, tmp.Close()); err != nil {
		return nil, err
	}
	if r.Size > 0 && n != r.Size || subtle.ConstantTimeCompare([]byte(sum), []byte(r.SHA256)) != 1 {
		return nil, &MismatchError{URL: r.Source, Want: r.SHA256, Got: sum, WantSize: r.Size, GotSize: n, Pinned: r.Pinned}
	}
	r.Size, r.Fetched, r.Path = n, f.now(), filepath.Join(dir, "claude")
	if err := os.Rename(tmp.Name(), r.Path); err != nil {
		return nil, err
	}
	data, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, RecordFile), append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	return r, nil
}

// copyTo downloads u into w, at most size bytes plus one when size is known (else [MaxBinary]),
// and returns the sha256 and length of what came.
func (f *Fetcher) copyTo(ctx context.Context, w io.Writer, u string, size int64) (string, int64, error) {
	resp, err := f.open(ctx, u)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	limit := int64(MaxBinary)
	if size > 0 {
		limit = size
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return "", n, &FetchError{URL: u, Err: err}
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// get reads u whole, refusing more than limit bytes.
func (f *Fetcher) get(ctx context.Context, u string, limit int64) ([]byte, error) {
	resp, err := f.open(ctx, u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, &FetchError{URL: u, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, &FetchError{URL: u, Err: fmt.Errorf("more than %d bytes", limit)}
	}
	return data, nil
}

// open sends a GET for u and returns a 200 response.
func (f *Fetcher) open(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, &FetchError{URL: u, Err: err}
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &FetchError{URL: u, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &FetchError{URL: u, Err: fmt.Errorf("HTTP %d", resp.StatusCode)}
	}
	return resp, nil
}

func (f *Fetcher) url(parts ...string) string {
	return strings.TrimRight(f.BaseURL, "/") + "/" + strings.Join(parts, "/")
}

func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now().UTC()
	}
	return time.Now().UTC()
}

func (f *Fetcher) progressf(format string, args ...any) {
	if f.Progress != nil {
		f.Progress(format, args...)
	}
}

// hashes reports whether the file at path has sha256 want.
func hashes(path, want string) bool {
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == want
}

// host is the host of u, for a person.
func host(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}
