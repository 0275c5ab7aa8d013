package claudecode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// DefaultBaseURL is where the official installer downloads releases from.
const DefaultBaseURL = "https://downloads.claude.ai/claude-code-releases"

// Limits on what a release server may send.
const (
	maxManifest = 1 << 20 // bytes of manifest.json
	// MaxBinary bounds a download whose size nobody stated (a pinned sha256 on a mirror); a
	// manifest's own size wins. Releases of late 2026 are about 230 MB.
	MaxBinary = 2 << 30
)

// Manifest is a release's manifest.json.
type Manifest struct {
	Version   string              `json:"version"`
	BuildDate string              `json:"buildDate"`
	Platforms map[string]Platform `json:"platforms"`
}

// Platform is one platform's entry of a [Manifest].
type Platform struct {
	Binary   string `json:"binary"`
	Checksum string `json:"checksum"` // sha256, 64 lower-case hex digits
	Size     int64  `json:"size"`
}

var checksumRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseManifest decodes data as the manifest of version and returns its entry for platform,
// with the manifest's build date (zero when it has none that parses). Everything the binary's
// verification relies on is checked: the version, the entry, its checksum, name and size.
func ParseManifest(data []byte, version, platform string) (Platform, time.Time, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Platform{}, time.Time{}, fmt.Errorf("the manifest is not JSON: %w", err)
	}
	if m.Version != version {
		return Platform{}, time.Time{}, fmt.Errorf("the manifest is for version %q, not %s", clip(m.Version), version)
	}
	p, ok := m.Platforms[platform]
	if !ok {
		return Platform{}, time.Time{}, fmt.Errorf("the manifest lists no %s build (it lists %s)", platform, platformList(m.Platforms))
	}
	switch {
	case !checksumRe.MatchString(p.Checksum):
		return Platform{}, time.Time{}, fmt.Errorf("the %s checksum %q is not 64 lower-case hex digits", platform, clip(p.Checksum))
	case p.Binary != "" && p.Binary != "claude":
		return Platform{}, time.Time{}, fmt.Errorf("the %s binary is %q, not claude", platform, clip(p.Binary))
	case p.Size < 0 || p.Size > MaxBinary:
		return Platform{}, time.Time{}, fmt.Errorf("the %s size %d is outside 1 byte to 2 GiB", platform, p.Size)
	}
	built, _ := time.Parse(time.RFC3339, m.BuildDate)
	return p, built, nil
}

// platformList names at most eight platform keys, for an error.
func platformList(ps map[string]Platform) string {
	keys := make([]string, 0, len(ps))
	for k := range ps {
		keys = append(keys, clip(k))
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		return "none"
	}
	if len(keys) > 8 {
		keys = append(keys[:8], "…")
	}
	return strings.Join(keys, ", ")
}

// clip shortens text a server chose before it reaches an error message; the caller's printer
// escapes what is left.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// PlatformFor is the release platform of a Linux image for a Go architecture. The agent image is
// Debian, so the glibc build, never a -musl one.
func PlatformFor(goarch string) (string, error) {
	switch goarch {
	case "amd64":
		return "linux-x64", nil
	case "arm64":
		return "linux-arm64", nil
	}
	return "", fmt.Errorf("no native Linux build of Claude Code exists for %s", goarch)
}
