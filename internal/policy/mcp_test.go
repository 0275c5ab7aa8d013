package policy

import "testing"

// TestMCPAllows: the allow decision is the Tools map, or anything when Unlisted; the server a
// tool is attributed to comes from Tools, the unlisted server's prefix, or the only unlisted
// server without one, and is "?" only when several could provide it.
func TestMCPAllows(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mcp    MCP
		tool   string
		want   string
		wantOK bool
	}{
		{"listed", MCP{Servers: []string{"a"}, Tools: map[string]string{"a1": "a"}}, "a1", "a", true},
		{"not listed, not unlisted", MCP{Servers: []string{"a"}, Tools: map[string]string{"a1": "a"}}, "x", "", false},
		{"the only server, no tool list", MCP{Servers: []string{"c"}, Tools: map[string]string{}, Unlisted: true}, "x", "c", true},
		{"the only unlisted one beside a listed one", MCP{Servers: []string{"a", "c"}, Tools: map[string]string{"a1": "a"}, Unlisted: true}, "x", "c", true},
		{"listed still wins", MCP{Servers: []string{"a", "c"}, Tools: map[string]string{"a1": "a"}, Unlisted: true}, "a1", "a", true},
		{"two unlisted", MCP{Servers: []string{"c", "d"}, Tools: map[string]string{}, Unlisted: true}, "x", "?", true},
		{"two unlisted, one prefixed: its prefix", MCP{Servers: []string{"c", "d"}, Tools: map[string]string{}, Unlisted: true,
			Prefixes: map[string]string{"d": "dd"}}, "dd__x", "d", true},
		{"two unlisted, one prefixed: the other", MCP{Servers: []string{"c", "d"}, Tools: map[string]string{}, Unlisted: true,
			Prefixes: map[string]string{"d": "dd"}}, "x", "c", true},
		{"prefix needs the separator", MCP{Servers: []string{"c", "d"}, Tools: map[string]string{}, Unlisted: true,
			Prefixes: map[string]string{"c": "cc", "d": "dd"}}, "ddx", "?", true},
		{"both prefixed", MCP{Servers: []string{"c", "d"}, Tools: map[string]string{}, Unlisted: true,
			Prefixes: map[string]string{"c": "cc", "d": "dd"}}, "cc__x", "c", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.mcp.Allows(tc.tool)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("Allows(%q) = %q, %v, want %q, %v", tc.tool, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestMCPPrefixesRoundTrip: the prefixes survive Marshal and Parse, which refuses unknown
// fields, so netd reads what render wrote.
func TestMCPPrefixesRoundTrip(t *testing.T) {
	p := Netd{Version: Version, Project: "p", Egress: []string{}, MCP: &MCP{Upstream: "http://gw:8811/mcp",
		Servers: []string{"c"}, Tools: map[string]string{}, Unlisted: true, Prefixes: map[string]string{"c": "cc"}}}
	got, err := Parse(p.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := got.MCP.Allows("cc__t"); s != "c" {
		t.Errorf("after a round trip Allows(cc__t) = %q, want c", s)
	}
}
