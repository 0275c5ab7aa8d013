package toolcost

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/policy"
)

func raws(t *testing.T, tools ...string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, s := range tools {
		out = append(out, json.RawMessage(s))
	}
	return out
}

// TestCostOf: tools are attributed and filtered exactly as netd does (policy.MCP.Allows),
// priced at compact JSON length / 4, sorted by cost.
func TestCostOf(t *testing.T) {
	tools := raws(t,
		`{"name":"a1", "inputSchema": {"type": "object"}}`, // 45 bytes compact: 11 tokens
		`{"name":"b1","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`,
		`{"name":"hidden","inputSchema":{"type":"object"}}`,
		`{"name":"odd","inputSchema":{}}`,
		`not json`,
	)
	narrowed := map[string][]string{"a": {"a1"}}
	t.Run("listed only", func(t *testing.T) {
		rep := Of(tools, &policy.MCP{Tools: map[string]string{"a1": "a", "b1": "b"}}, narrowed)
		// "mcp__abox__b1\n" is 15 bytes: 4 tokens, rounded up.
		want := Report{
			Total: 20 + 11,
			Names: 4 + 4,
			Tools: []Tool{{Tool: "b1", Server: "b", Tokens: 20, NameTokens: 4}, {Tool: "a1", Server: "a", Tokens: 11, NameTokens: 4}},
			Servers: []Server{
				{Server: "b", Tools: 1, Tokens: 20, NameTokens: 4, Share: 20.0 / 31, ToolNames: []string{"b1"}},
				{Server: "a", Tools: 1, Tokens: 11, NameTokens: 4, Share: 11.0 / 31, Narrowed: true, ToolNames: []string{"a1"}},
			},
		}
		if diff := cmp.Diff(want, rep); diff != "" {
			t.Errorf("Of (-want +got):\n%s", diff)
		}
	})
	t.Run("unlisted attributed to the only unlisted server", func(t *testing.T) {
		rep := Of(tools, &policy.MCP{Servers: []string{"a", "c"}, Tools: map[string]string{"a1": "a"}, Unlisted: true}, nil)
		var got []string
		for _, tc := range rep.Tools {
			got = append(got, tc.Tool+"@"+tc.Server)
		}
		want := []string{"b1@c", "hidden@c", "a1@a", "odd@c"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
	})
	t.Run("unlisted as ? when two servers could provide it", func(t *testing.T) {
		rep := Of(tools, &policy.MCP{Servers: []string{"a", "c", "d"}, Tools: map[string]string{"a1": "a"}, Unlisted: true}, nil)
		var got []string
		for _, tc := range rep.Tools {
			got = append(got, tc.Tool+"@"+tc.Server)
		}
		want := []string{"b1@?", "hidden@?", "a1@a", "odd@?"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
	})
	t.Run("nothing allowed", func(t *testing.T) {
		rep := Of(tools, &policy.MCP{Tools: map[string]string{}}, nil)
		if rep.Total != 0 || len(rep.Tools) != 0 || len(rep.Servers) != 0 {
			t.Errorf("Of = %+v, want nothing", rep)
		}
	})
}

// TestCostPerTurn: what applies per turn follows the configured Claude Code: the names when it
// defers (plus the schemas of tools that ask to be always loaded), every schema when it does not.
func TestCostPerTurn(t *testing.T) {
	tools := raws(t,
		`{"name":"big","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"a long description of q"}}}}`,
		`{"name":"pinned","_meta":{"anthropic/alwaysLoad":true},"inputSchema":{"type":"object"}}`,
	)
	mcp := &policy.MCP{Servers: []string{"s"}, Tools: map[string]string{"big": "s", "pinned": "s"}}
	for _, tc := range []struct {
		name     string
		version  string
		env      map[string]string
		deferred bool
		perTurn  func(r Report) int
	}{
		{"default defers", "2.1.332", nil, true, func(r Report) int { return r.Names + r.Upfront }},
		{"switched off", "2.1.332", map[string]string{"ENABLE_TOOL_SEARCH": "false"}, false, func(r Report) int { return r.Total }},
		{"threshold mode below it", "2.1.40", nil, false, func(r Report) int { return r.Total }},
		{"threshold at zero", "2.1.332", map[string]string{"ENABLE_TOOL_SEARCH": "auto:0"}, true, func(r Report) int { return r.Names + r.Upfront }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Of(tools, mcp, nil)
			rep.Price(tc.version, tc.env)
			if rep.Client.Deferred != tc.deferred || rep.PerTurn != tc.perTurn(rep) {
				t.Errorf("price(%s, %v): deferred %v, per turn %d (%+v), want deferred %v", tc.version, tc.env, rep.Client.Deferred, rep.PerTurn, rep, tc.deferred)
			}
			pinned := rep.Tools[len(rep.Tools)-1]
			if !pinned.AlwaysLoad || rep.Upfront != pinned.Tokens || rep.Names != rep.Tools[0].NameTokens {
				t.Errorf("always-load tool %+v: upfront %d, names %d; want its schema upfront and only big's name", pinned, rep.Upfront, rep.Names)
			}
			if rep.Servers[0].NameTokens != rep.Names {
				t.Errorf("server s names %d tokens, want %d: only its deferrable tools' names", rep.Servers[0].NameTokens, rep.Names)
			}
		})
	}
}

func TestUnreadSwitches(t *testing.T) {
	if got := UnreadSwitches(map[string]string{"GITHUB_TOKEN": "gh"}); got != "" {
		t.Errorf("unrelated env_secrets: %q, want nothing", got)
	}
	got := UnreadSwitches(map[string]string{"ANTHROPIC_BASE_URL": "proxy-url", "ENABLE_TOOL_SEARCH": "x"})
	if !strings.Contains(got, "env_secrets also sets ENABLE_TOOL_SEARCH and ANTHROPIC_BASE_URL") {
		t.Errorf("UnreadSwitches = %q, want both variables named", got)
	}
}

// TestNarrowCandidate: the first server by cost that is not narrowed, attributed and has a
// choice of tools; none when every server is out.
func TestNarrowCandidate(t *testing.T) {
	rep := Report{Servers: []Server{
		{Server: "?", Tools: 5, Tokens: 900},
		{Server: "narrowed", Tools: 4, Tokens: 800, Narrowed: true},
		{Server: "single", Tools: 1, Tokens: 700},
		{Server: "wide", Tools: 3, Tokens: 600},
		{Server: "cheaper", Tools: 3, Tokens: 100},
	}}
	if s, ok := rep.NarrowCandidate(); !ok || s.Server != "wide" {
		t.Errorf("NarrowCandidate = %+v, %v; want wide", s, ok)
	}
	rep.Servers = rep.Servers[:3]
	if s, ok := rep.NarrowCandidate(); ok {
		t.Errorf("NarrowCandidate = %+v, want none", s)
	}
	rep = Report{Total: 50, Upfront: 20}
	if got := rep.Deferrable(); got != 30 {
		t.Errorf("Deferrable = %d, want 30", got)
	}
}
