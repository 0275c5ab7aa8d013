package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/manifest"
)

// problemsOf returns the problems of err, which must be a *manifest.Error (or nil).
func problemsOf(t *testing.T, err error) []manifest.Problem {
	t.Helper()
	if err == nil {
		return nil
	}
	var me *manifest.Error
	if !errors.As(err, &me) {
		t.Fatalf("error = %T %v, want *manifest.Error", err, err)
	}
	return me.Problems
}

// lines returns the problems of err as "loc: msg" lines.
func lines(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, p := range problemsOf(t, err) {
		out = append(out, p.Loc+": "+p.Msg)
	}
	return out
}

// TestProblemsArePrintable: hostile keys and values never reach a problem unescaped.
func TestProblemsArePrintable(t *testing.T) {
	tests := []struct {
		name    string
		parse   func([]byte) error
		data    string
		wantLoc string
	}{
		{"profile name", parseConfig, `profiles: {"a\e[31m": {port: 8812}}`, `profiles."a\x1b[31m"`},
		{"agent_env name", parseConfig, `agent_env: {"A\nB": x}`, `agent_env."A\nB"`},
		{"decoder value", parseConfig, "limits: {pids: \"\\e]0;x\\a\"}", "line 1"},
		{"unknown key", parseConfig, `"\u202ekey": 1`, "line 1"},
		{"custom server name", parseCustom, `"s\u202e": {image: x}`, `servers."s\u202e"`},
		{"custom env name", parseCustom, `s: {image: x, pin: false, env: {"A\x1bB": v}}`, `servers.s.env."A\x1bB"`},
		{"secrets value", parseSecrets, "mappings: \"\\e[2J\"", "line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := problemsOf(t, tc.parse([]byte(tc.data+"\n")))
			found := false
			for _, p := range ps {
				found = found || p.Loc == tc.wantLoc
				for _, s := range []string{p.Loc, p.Msg, p.Hint} {
					if i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
						t.Errorf("problem %+v carries %q", p, s[i:])
					}
				}
			}
			if !found {
				t.Errorf("problems = %+v, want one at %s", ps, tc.wantLoc)
			}
		})
	}
}

func parseConfig(data []byte) error {
	_, err := Parse(data, "config.yaml")
	return err
}

func parseSecrets(data []byte) error {
	_, err := ParseSecrets(data, "secrets.yaml")
	return err
}

func parseCustom(data []byte) error {
	_, err := ParseCustomServers(data, "custom-servers.yaml")
	return err
}

// TestDecodeStrictDocuments: a second document, or an entry with a null key, would be
// silently ignored by the decoder; every file refuses both.
func TestDecodeStrictDocuments(t *testing.T) {
	const nullHint = "name the key or remove the entry; an entry with a null key would be ignored"
	tests := []struct {
		name  string
		parse func([]byte) error
		data  string
		want  []manifest.Problem
	}{
		{"config second document", parseConfig, "network: a\n---\ngateway: {image: x}\n", []manifest.Problem{{Loc: "file", Msg: "holds more than one YAML document"}}},
		{"config empty second document", parseConfig, "network: a\n---\n", []manifest.Problem{{Loc: "file", Msg: "holds more than one YAML document"}}},
		{"config null key", parseConfig, "~: {gateway: {image: x}}\n", []manifest.Problem{{Loc: "line 1", Msg: "has a null key", Hint: nullHint}}},
		{"config nested null key", parseConfig, "limits:\n  null: 5\n", []manifest.Problem{{Loc: "line 2", Msg: "has a null key", Hint: nullHint}}},
		{"secrets second document", parseSecrets, "mappings: []\n---\nmappings: [{secret: a}]\n", []manifest.Problem{{Loc: "file", Msg: "holds more than one YAML document"}}},
		{"secrets null key", parseSecrets, "mappings: [{secret: a, source: prompt, ~: x}]\n", []manifest.Problem{{Loc: "line 1", Msg: "has a null key", Hint: nullHint}}},
		{"custom second document", parseCustom, "a: {image: x, pin: false}\n---\nb: {image: y}\n", []manifest.Problem{{Loc: "file", Msg: "holds more than one YAML document"}}},
		{"custom null key", parseCustom, "a: {image: x, pin: false}\n~: {image: y}\n", []manifest.Problem{{Loc: "line 2", Msg: "has a null key", Hint: nullHint}}},
		{"document markers are fine", parseConfig, "---\nnetwork: a\n...\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.parse([]byte(tc.data)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems of %q mismatch (-want +got):\n%s", tc.data, diff)
			}
		})
	}
}

// TestParseMapsReplaceDefaults: profiles set in config.yaml replace the default profile;
// agent_env is merged over the defaults; a mapping the file leaves out keeps its default.
func TestParseMapsReplaceDefaults(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		profiles map[string]Profile
		agentEnv map[string]string
	}{
		{"absent", "network: n\n", map[string]Profile{DefaultProfile: {Port: DefaultPort}}, DefaultAgentEnv()},
		{"own profile on the default port", "profiles: {work: {port: 8811}}\n", map[string]Profile{"work": {Port: 8811}}, DefaultAgentEnv()},
		{"own agent env adds to the defaults", "agent_env: {FOO: '1'}\n", map[string]Profile{DefaultProfile: {Port: DefaultPort}}, withEnv(DefaultAgentEnv(), "FOO", "1")},
		{"agent env overrides a default", "agent_env: {DISABLE_AUTOUPDATER: '0'}\n", map[string]Profile{DefaultProfile: {Port: DefaultPort}}, withEnv(DefaultAgentEnv(), "DISABLE_AUTOUPDATER", "0")},
		{"empty agent env keeps the defaults", "agent_env: {}\n", map[string]Profile{DefaultProfile: {Port: DefaultPort}}, DefaultAgentEnv()},
		{"null agent env keeps the defaults", "agent_env:\n", map[string]Profile{DefaultProfile: {Port: DefaultPort}}, DefaultAgentEnv()},
		{"tilde agent env keeps the defaults", "agent_env: ~\n", map[string]Profile{DefaultProfile: {Port: DefaultPort}}, DefaultAgentEnv()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.data), "config.yaml")
			if err != nil {
				t.Fatalf("Parse(%q) error = %v", tc.data, err)
			}
			if diff := cmp.Diff(tc.profiles, c.Profiles); diff != "" {
				t.Errorf("Profiles mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.agentEnv, c.AgentEnv); diff != "" {
				t.Errorf("AgentEnv mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// Parse does not share maps with Default, or with another Parse.
	a, _ := Parse([]byte("network: n\n"), "config.yaml")
	a.Profiles["x"] = Profile{Port: 9000}
	a.AgentEnv["X"] = "1"
	if _, ok := Default().Profiles["x"]; ok {
		t.Error("a change to Parse's Profiles reached Default()")
	}
}

// An empty rtk version or source means the default, as an absent one does: rendered as is, an
// empty version would make a download URL with no version in it (found by FuzzConfigParse:
// "version: !0" decoded as "").
func TestParseRTKEmptyMeansDefault(t *testing.T) {
	sum := "  sha256: " + hex64 + "\n"
	for _, data := range []string{
		"rtk:\n  enabled: true\n" + sum,
		"rtk:\n  enabled: true\n  version: ''\n  source: ''\n" + sum,
		"rtk:\n  enabled: true\n  version: !0\n" + sum,
	} {
		c, err := Parse([]byte(data), "config.yaml")
		if err != nil {
			t.Fatalf("Parse(%q) error = %v", data, err)
		}
		want := RTK{Enabled: true, Version: DefaultRTKVersion, Source: SourceNative, SHA256: hex64}
		if c.RTK != want {
			t.Errorf("Parse(%q).RTK = %+v, want %+v", data, c.RTK, want)
		}
	}
	c, err := Parse([]byte("rtk: {version: 1.2.3}\n"), "config.yaml")
	if err != nil || c.RTK.Version != "1.2.3" {
		t.Errorf("a given rtk version is kept: got %+v, %v", c.RTK, err)
	}
}

func withEnv(m map[string]string, k, v string) map[string]string {
	m[k] = v
	return m
}

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	if c, err := Load(missing); err != nil || !cmp.Equal(c, Default()) {
		t.Errorf("Load(missing) = %+v, %v, want Default()", c, err)
	}
	if s, err := LoadSecrets(missing); err != nil || len(s.Mappings) != 0 {
		t.Errorf("LoadSecrets(missing) = %+v, %v, want empty", s, err)
	}
	if cs, err := LoadCustomServers(missing); err != nil || cs == nil || len(cs) != 0 {
		t.Errorf("LoadCustomServers(missing) = %+v, %v, want empty", cs, err)
	}

	write := func(name, data string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if c, err := Load(write("config.yaml", "network: other-net\n")); err != nil || c.Network != "other-net" {
		t.Errorf("Load() = %+v, %v", c, err)
	}
	bad := write("bad.yaml", "network: 'a b'\n")
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": network: ") {
		t.Errorf("Load(invalid) error = %v, want it located in %s", err, bad)
	}
	if s, err := LoadSecrets(write("secrets.yaml", "mappings: [{secret: a, env: A}]\n")); err != nil || len(s.Mappings) != 1 {
		t.Errorf("LoadSecrets() = %+v, %v", s, err)
	}
	if cs, err := LoadCustomServers(write("custom.yaml", "a: {image: x, pin: false}\n")); err != nil || len(cs) != 1 {
		t.Errorf("LoadCustomServers() = %+v, %v", cs, err)
	}
	big := write("big.yaml", "# "+strings.Repeat("x", MaxSize)+"\n")
	for name, load := range map[string]func(string) error{
		"Load":              func(p string) error { _, err := Load(p); return err },
		"LoadSecrets":       func(p string) error { _, err := LoadSecrets(p); return err },
		"LoadCustomServers": func(p string) error { _, err := LoadCustomServers(p); return err },
	} {
		if err := load(big); err == nil || !strings.Contains(err.Error(), "is larger than") {
			t.Errorf("%s(too large) error = %v", name, err)
		}
		if err := load(dir); err == nil {
			t.Errorf("%s(a directory) error = nil", name)
		}
	}
}

// TestDefaultClaudeCode: with no config.yaml, Claude Code is the native build of a dated,
// exact version from the official release URL, and needs no sha256 from the user.
func TestDefaultClaudeCode(t *testing.T) {
	cc := Default().ClaudeCode
	if cc.Source != SourceNative || cc.Version != DefaultClaudeVersion || cc.SHA256 != "" || cc.Releases() != DefaultClaudeReleaseURL {
		t.Errorf("Default().ClaudeCode = %+v (releases %s)", cc, cc.Releases())
	}
	if !versionRe.MatchString(DefaultClaudeVersion) {
		t.Errorf("DefaultClaudeVersion %q is not an exact version", DefaultClaudeVersion)
	}
	if _, err := time.Parse(time.DateOnly, DefaultClaudeReleased); err != nil {
		t.Errorf("DefaultClaudeReleased: %v", err)
	}
	if err := Default().Validate("default"); err != nil {
		t.Errorf("Default().Validate = %v", err)
	}
	if mirror := (ClaudeCode{ReleaseURL: "https://mirror.example/r"}); mirror.Releases() != "https://mirror.example/r" {
		t.Errorf("Releases() = %q, want the configured mirror", mirror.Releases())
	}
}

func TestDefaultProfile(t *testing.T) {
	for _, tc := range []struct {
		profiles map[string]Profile
		want     string
	}{
		{map[string]Profile{"work": {Port: 8812}, DefaultProfile: {Port: 8811}}, DefaultProfile},
		{map[string]Profile{"zeta": {Port: 8812}, "alpha": {Port: 8813}}, "alpha"},
		{nil, DefaultProfile},
	} {
		c := &Config{Profiles: tc.profiles}
		if got := c.DefaultProfile(); got != tc.want {
			t.Errorf("DefaultProfile() of %v = %q, want %q", tc.profiles, got, tc.want)
		}
	}
}
