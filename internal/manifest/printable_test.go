package manifest

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

func TestKeyLoc(t *testing.T) {
	tests := []struct {
		key, want string
	}{
		{"TOKEN", "env_secrets.TOKEN"},
		{"a.b-c_d", "env_secrets.a.b-c_d"},
		{"", `env_secrets.""`},
		{"A B", `env_secrets."A B"`},
		{"A\nB", `env_secrets."A\nB"`},
		{"\x1b]0;pwned\a", `env_secrets."\x1b]0;pwned\a"`},
		{"TОKEN", `env_secrets."T\u041eKEN"`}, // Cyrillic О
		{"a\u202eb", `env_secrets."a\u202eb"`},
		{"-x", `env_secrets."-x"`},
	}
	for _, tc := range tests {
		if got := KeyLoc("env_secrets", tc.key); got != tc.want {
			t.Errorf("KeyLoc(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

// TestProblemsArePrintable feeds hostile keys and values that reach problem locations and
// decoder messages, and checks that no problem carries a character a terminal would act on.
func TestProblemsArePrintable(t *testing.T) {
	const head = "project: demo\nprofile: default\n"
	tests := []struct {
		name, yaml string
		wantLoc    string
	}{
		{"remote server name", `remote_servers: {"x\ny": {url: "https://mcp.example.com"}}`, `remote_servers."x\ny"`},
		{"header name", `remote_servers: {x: {url: "https://mcp.example.com", headers: {"A\e[31m": v}}}`, `remote_servers.x.headers."A\x1b[31m"`},
		{"tools key", `tools: {"a\u202eb": [t]}`, `tools."a\u202eb"`},
		{"server_network key", `server_network: {"s\x00": none}`, `server_network."s\x00"`},
		{"env_secrets key", `env_secrets: {"A\e]0;x\a": s}`, `env_secrets."A\x1b]0;x\a"`},
		{"type error value", "run: {timeout: \"\\e[2J\"}", "line 3"},
		{"unknown key", `"\e]0;title\a": 1`, "line 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head+tc.yaml+"\n"), FileName)
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("Parse() error = %v, want *Error", err)
			}
			found := false
			for _, p := range me.Problems {
				found = found || p.Loc == tc.wantLoc
				for _, s := range []string{p.Loc, p.Msg, p.Hint} {
					if i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
						t.Errorf("problem %+v carries %q", p, s[i:])
					}
				}
			}
			if !found {
				t.Errorf("Parse() problems = %+v, want one at %s", me.Problems, tc.wantLoc)
			}
		})
	}
}
