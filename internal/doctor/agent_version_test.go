package doctor

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/config"
)

// TestClaudeVersionAge: doctor warns once the pinned Claude Code is older than
// config.MaxClaudeAge, dated by the release manifest abox verified, else by abox's default,
// which bounds every older version; a newer version or a file source gives no warning.
func TestClaudeVersionAge(t *testing.T) {
	platform, err := claudecode.PlatformFor(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	def, _ := time.Parse(time.DateOnly, config.DefaultClaudeReleased)
	cases := []struct {
		name    string
		cc      config.ClaudeCode
		built   time.Time // a verified release record with this buildDate; zero for none
		now     time.Time
		want    Status
		contain string
	}{
		{"default, recent", config.ClaudeCode{Source: "native", Version: config.DefaultClaudeVersion}, time.Time{}, def.AddDate(0, 0, 5),
			OK, "was published " + config.DefaultClaudeReleased + " (abox's default): 5 days old"},
		{"default, a year on", config.ClaudeCode{Source: "native", Version: config.DefaultClaudeVersion}, time.Time{}, def.AddDate(1, 0, 0),
			Warn, ": 365 days old (doctor warns past 90 days)"},
		{"older than the default, bound only", config.ClaudeCode{Source: "npm", Version: "2.1.0"}, time.Time{}, def.AddDate(0, 0, 10),
			OK, "2.1.0 is older than abox's default " + config.DefaultClaudeVersion + " of " + config.DefaultClaudeReleased + ": at least 10 days old"},
		{"older than the default, past the bound", config.ClaudeCode{Source: "npm", Version: "2.1.0"}, time.Time{}, def.AddDate(0, 4, 0),
			Warn, "at least"},
		{"dated by its verified manifest", config.ClaudeCode{Source: "native", Version: "2.1.0"}, time.Date(2026, 1, 7, 0, 0, 0, 0, time.UTC), def.AddDate(0, 0, 10),
			Warn, "2.1.0 was built 2026-01-07 (its release manifest): 331 days old"},
		{"newer than the default", config.ClaudeCode{Source: "native", Version: "2.2.0"}, time.Time{}, def.AddDate(2, 0, 0),
			OK, "newer than abox's default"},
		{"prerelease of the default is older", config.ClaudeCode{Source: "npm", Version: config.DefaultClaudeVersion + "-beta.1"}, time.Time{}, def.AddDate(1, 0, 0),
			Warn, "is older than abox's default"},
		{"file source", config.ClaudeCode{Source: "file", Version: "1.0.0", Path: "/x", SHA256: strings.Repeat("a", 64)}, time.Time{}, def.AddDate(3, 0, 0),
			Skip, "the version is whatever the file is"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest)
			f.cfg.ClaudeCode = tc.cc
			if !tc.built.IsZero() {
				writeRecord(t, f, tc.cc.Version, platform, tc.built)
			}
			e := f.env()
			e.Now = func() time.Time { return tc.now }
			got := agentClaudeVersion(context.Background(), e)
			wantStatus(t, tc.name, got, tc.want)
			if !strings.Contains(got.Detail, tc.contain) {
				t.Errorf("detail %q does not contain %q", got.Detail, tc.contain)
			}
			if got.Status == Warn && !strings.Contains(got.Hint, "npm view @anthropic-ai/claude-code version") {
				t.Errorf("hint %q does not say how to find a current version", got.Hint)
			}
		})
	}
}

func writeRecord(t *testing.T, f *fixture, version, platform string, built time.Time) {
	t.Helper()
	dir := claudecode.Dir(f.paths.ClaudeReleases(), version, platform)
	mkdir(t, dir)
	data, _ := json.Marshal(claudecode.Release{Version: version, Platform: platform, SHA256: strings.Repeat("c", 64), BuildDate: built})
	if err := os.WriteFile(dir+"/"+claudecode.RecordFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
