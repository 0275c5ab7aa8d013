package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNamePredicates(t *testing.T) {
	tests := []struct {
		in                                 string
		project, server, secret, env, tool bool
	}{
		{"demo", true, true, true, true, true},
		{"Demo", false, true, true, true, true},
		{"a.b-c_d", true, true, true, false, true},
		{"9lives", true, true, true, false, true},
		{"_x", false, false, false, true, true},
		{"-x", false, false, false, false, false},
		{".x", false, false, false, false, false},
		{"", false, false, false, false, false},
		{"A_B", false, true, true, true, true},
		{"a b", false, false, false, false, false},
		{"a\n", false, false, false, false, false},
		{"a\x00", false, false, false, false, false},
		{"$(id)", false, false, false, false, false},
		{"dеmo", false, false, false, false, false}, // Cyrillic е
		{strings.Repeat("a", 64), true, true, true, true, true},
		{strings.Repeat("a", 65), false, false, true, true, true},
		{strings.Repeat("a", 128), false, false, true, true, true},
		{strings.Repeat("a", 129), false, false, false, false, false},
	}
	for _, tc := range tests {
		for _, p := range []struct {
			name string
			fn   func(string) bool
			want bool
		}{
			{"IsProjectName", IsProjectName, tc.project},
			{"IsServerName", IsServerName, tc.server},
			{"IsSecretName", IsSecretName, tc.secret},
			{"IsEnvName", IsEnvName, tc.env},
			{"IsToolName", IsToolName, tc.tool},
		} {
			if got := p.fn(tc.in); got != p.want {
				t.Errorf("%s(%.20q) = %v, want %v", p.name, tc.in, got, p.want)
			}
		}
	}
}

func TestCheckText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string // "" for nil
	}{
		{"", 10, ""},
		{"printable ~!@#$%^&*()`'\"\\", 100, ""},
		{"0123456789", 10, ""},
		{"01234567890", 10, "is longer than 10 characters"},
		{"a\nb", 10, "contains a control character"},
		{"a\rb", 10, "contains a control character"},
		{"a\tb", 10, "contains a control character"},
		{"\x00", 10, "contains a control character"},
		{"\x1b[0m", 10, "contains a control character"},
		{"\x7f", 10, "contains a control character"},
		{"\u0085", 10, `contains a non-ASCII character '\u0085'`},
		{"é", 10, "contains a non-ASCII character 'é'"},
		{"\u202e", 10, `contains a non-ASCII character '\u202e'`},
		{"\xff", 10, `contains a non-ASCII character '�'`},
	}
	for _, tc := range tests {
		err := CheckText(tc.in, tc.max)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("CheckText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestCheckRelGlob(t *testing.T) {
	for _, ok := range []string{".env*", "a/b/c", "**/*.pem", "a..b", "./x", "x/", "a b"} {
		if err := CheckRelGlob(ok); err != nil {
			t.Errorf("CheckRelGlob(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "/x", "..", "../x", "a/../b", "a/..", `a"`, "a'", "a`", "a$", `a\`, "a\n", "é"} {
		if err := CheckRelGlob(bad); err == nil {
			t.Errorf("CheckRelGlob(%q) = nil, want an error", bad)
		}
	}
}

func TestHeaderVars(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Bearer ${TOKEN}", []string{"TOKEN"}},
		{"${A}:${B}", []string{"A", "B"}},
		{"${}", []string{""}},
		{"$TOKEN ${unterminated", nil},
		{"${a b}", []string{"a b"}},
		{"no vars", nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, HeaderVars(tc.in)); diff != "" {
			t.Errorf("HeaderVars(%q) mismatch (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestProjectNameFor(t *testing.T) {
	for _, tc := range []struct{ ws, want string }{
		{"/home/me/My Project", "my-project"},
		{"/src/api.v2_x", "api.v2_x"},
		{"/src/.hidden", "hidden"},
		{"/src/___", "project"},
		{"/src/Ünïcode", "n--code"}, // each byte of ü and ï folds, then the leading ones go
		{"/src/" + strings.Repeat("a", 70), strings.Repeat("a", 64)},
	} {
		got := ProjectNameFor(tc.ws)
		if got != tc.want {
			t.Errorf("ProjectNameFor(%q) = %q, want %q", tc.ws, got, tc.want)
		}
		if !IsProjectName(got) {
			t.Errorf("ProjectNameFor(%q) = %q, which is not a valid project name", tc.ws, got)
		}
	}
}
