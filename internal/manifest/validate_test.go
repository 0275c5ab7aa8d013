package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// base is a minimal valid manifest that the table tests extend.
const base = "project: demo\nprofile: default\n"

// problems parses data and returns its problems as "loc: msg" lines, or nil if it is valid.
func problems(t *testing.T, data string) []string {
	t.Helper()
	_, err := Parse([]byte(data), FileName)
	if err == nil {
		return nil
	}
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("Parse(%q) error = %T %v, want *Error", data, err, err)
	}
	if me.Source != FileName {
		t.Errorf("Parse(%q) error Source = %q, want %q", data, me.Source, FileName)
	}
	out := make([]string, len(me.Problems))
	for i, p := range me.Problems {
		out[i] = p.Loc + ": " + p.Msg
	}
	return out
}

// flowList renders items as a YAML flow sequence of double-quoted strings.
func flowList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func repeatf(n int, format string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

func TestListBounds(t *testing.T) {
	over := MaxListLen + 1
	tests := []struct {
		name string
		yaml string
		loc  string
	}{
		{"servers", "servers: " + flowList(repeatf(over, "s%d")), "servers"},
		{"toolchains", "toolchains: " + flowList(repeatf(over, "t%d")), "toolchains"},
		{"mounts.mask", "mounts: {mask: " + flowList(repeatf(over, "m%d")) + "}", "mounts.mask"},
		{"mounts.watch", "mounts: {watch: " + flowList(repeatf(over, "w%d")) + "}", "mounts.watch"},
		{"mounts.context", "mounts: {context: " + flowList(repeatf(over, "/c%d")) + "}", "mounts.context"},
		{"egress", "egress: " + flowList(repeatf(over, "h%d.example.com")), "egress"},
		{"egress_ignored", "egress_ignored: " + flowList(repeatf(over, "h%d.example.com")), "egress_ignored"},
		{"tools", "servers: [s]\ntools: {s: " + flowList(repeatf(over, "t%d")) + "}", "tools.s"},
		{"remote secrets", "remote_servers: {r: {url: \"https://mcp.example.com\", secrets: [" +
			strings.Repeat("{name: n, env: E}, ", over) + "]}}", "remote_servers.r.secrets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, base+tc.yaml+"\n")
			want := []string{fmt.Sprintf("%s: has %d entries; at most %d are allowed", tc.loc, over, MaxListLen)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRemoteBadNameStillChecked: a remote server with an invalid name has the rest of its
// fields checked too, so that every problem is reported at once.
func TestRemoteBadNameStillChecked(t *testing.T) {
	got := problems(t, base+`remote_servers: {"bad name": {url: "http://mcp.example.com", transport: ws}}`+"\n")
	want := []string{
		`remote_servers."bad name": "bad name" is not a valid server name`,
		`remote_servers."bad name".url: "http://mcp.example.com" is not an https URL`,
		`remote_servers."bad name".transport: "ws" is not one of streamable-http, sse`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

// TestHeaderRefNotAnEnvName: a ${…} reference that cannot be an environment variable name is
// reported as such, not as an undeclared secret env with a hint to declare the impossible name.
func TestHeaderRefNotAnEnvName(t *testing.T) {
	_, err := Parse([]byte(base+`remote_servers: {r: {url: "https://mcp.example.com", headers: {Authorization: "Bearer ${a b} ${TOKEN} ${}"}}}`+"\n"), FileName)
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("Parse() error = %v, want *Error", err)
	}
	want := []Problem{
		{Loc: "remote_servers.r.headers.Authorization", Msg: `"${a b}" does not name an environment variable`,
			Hint: "write ${NAME}, where NAME is the env of one of this server's secrets"},
		{Loc: "remote_servers.r.headers.Authorization", Msg: "${TOKEN} is not a declared secret env",
			Hint: "declare it under secrets: with env: TOKEN"},
		{Loc: "remote_servers.r.headers.Authorization", Msg: `"${}" does not name an environment variable`,
			Hint: "write ${NAME}, where NAME is the env of one of this server's secrets"},
	}
	if diff := cmp.Diff(want, me.Problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestRemoteURLEncodedControl(t *testing.T) {
	tests := []struct {
		url  string
		want []string
	}{
		{"https://mcp.example.com/a%00b", []string{`remote_servers.r.url: "https://mcp.example.com/a%00b" contains a %-encoded control character`}},
		{"https://mcp.example.com/?q=%0A", []string{`remote_servers.r.url: "https://mcp.example.com/?q=%0A" contains a %-encoded control character`}},
		{"https://mcp.example.com/%1b%5b2J", []string{`remote_servers.r.url: "https://mcp.example.com/%1b%5b2J" contains a %-encoded control character`}},
		{"https://mcp.example.com/#%7F", []string{`remote_servers.r.url: "https://mcp.example.com/#%7F" contains a %-encoded control character`}},
		{"https://mcp.example.com/a%20b%2Fc%C3%A9", nil},
		{"https://mcp.example.com/100%25", nil},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			got := problems(t, base+fmt.Sprintf("remote_servers: {r: {url: %q}}\n", tc.url))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
