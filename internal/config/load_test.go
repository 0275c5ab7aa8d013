package config

import (
	"errors"
	"strings"
	"testing"
	"unicode"

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
