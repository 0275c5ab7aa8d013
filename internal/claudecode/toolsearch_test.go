package claudecode

import (
	"strings"
	"testing"
)

// TestToolSearchOf: the deferral decision over releases and the agent environment.
func TestToolSearchOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		env     map[string]string
		mode    string
		percent int
		why     string // in Why
	}{
		{"before tool search", "2.1.6", nil, Upfront, 0, "predates tool search"},
		{"before tool search, even when asked", "2.0.77", map[string]string{"ENABLE_TOOL_SEARCH": "true"}, Upfront, 0, "predates"},
		{"threshold mode by default", "2.1.7", nil, Auto, 10, "threshold mode"},
		{"last threshold default", "2.1.74", nil, Auto, 10, "threshold mode"},
		{"deferred by default", "2.1.75", nil, Deferred, 0, "by default"},
		{"abox's default", "2.1.332", nil, Deferred, 0, "by default from 2.1.75"},
		{"a pre-release of the switch is older", "2.1.75-beta.1", nil, Auto, 10, "threshold"},
		{"a later minor", "2.2.0", map[string]string{"DISABLE_AUTOUPDATER": "1"}, Deferred, 0, "by default"},
		{"switched off", "2.1.332", map[string]string{"ENABLE_TOOL_SEARCH": "false"}, Upfront, 0, "ENABLE_TOOL_SEARCH=false"},
		{"switched off with 0", "2.1.332", map[string]string{"ENABLE_TOOL_SEARCH": "0"}, Upfront, 0, "=0"},
		{"forced on", "2.1.40", map[string]string{"ENABLE_TOOL_SEARCH": "true"}, Deferred, 0, "=true"},
		{"auto", "2.1.332", map[string]string{"ENABLE_TOOL_SEARCH": "auto"}, Auto, 10, "=auto"},
		{"auto:N", "2.1.332", map[string]string{"ENABLE_TOOL_SEARCH": "auto:5"}, Auto, 5, "=auto:5"},
		{"auto:N out of range", "2.1.332", map[string]string{"ENABLE_TOOL_SEARCH": "auto:150"}, Deferred, 0, "abox assumes the default"},
		{"unknown value", "2.1.332", map[string]string{"ENABLE_TOOL_SEARCH": "maybe"}, Deferred, 0, "none of true"},
		{"proxy switches it off before 2.1.332", "2.1.331", map[string]string{"ANTHROPIC_BASE_URL": "https://llm-proxy.example.com/v1"}, Upfront, 0, "ANTHROPIC_BASE_URL"},
		{"proxy defers from 2.1.332, as measured", "2.1.332", map[string]string{"ANTHROPIC_BASE_URL": "https://llm-proxy.example.com/v1"}, Deferred, 0, "even with ANTHROPIC_BASE_URL on another host"},
		{"proxy in threshold era", "2.1.40", map[string]string{"ANTHROPIC_BASE_URL": "http://10.0.0.1:8080"}, Upfront, 0, "another host"},
		{"proxy with the variable set", "2.1.332", map[string]string{"ANTHROPIC_BASE_URL": "https://llm-proxy.example.com", "ENABLE_TOOL_SEARCH": "true"}, Deferred, 0, "=true"},
		{"Anthropic's own base URL", "2.1.332", map[string]string{"ANTHROPIC_BASE_URL": "https://api.anthropic.com"}, Deferred, 0, "by default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ToolSearchOf(tc.version, tc.env)
			if got.Mode != tc.mode || got.Percent != tc.percent || !strings.Contains(got.Why, tc.why) {
				t.Errorf("ToolSearchOf(%q, %v) = %+v, want mode %s, percent %d, why with %q", tc.version, tc.env, got, tc.mode, tc.percent, tc.why)
			}
		})
	}
}

func TestToolSearchDefers(t *testing.T) {
	auto := ToolSearch{Mode: Auto, Percent: 10}
	for _, tc := range []struct {
		ts     ToolSearch
		tokens int
		want   bool
	}{
		{ToolSearch{Mode: Deferred}, 0, true},
		{ToolSearch{Mode: Upfront}, 1 << 20, false},
		{auto, 19_999, false},
		{auto, 20_000, true},
		{ToolSearch{Mode: Auto, Percent: 0}, 0, true},
	} {
		if got := tc.ts.Defers(tc.tokens, 200_000); got != tc.want {
			t.Errorf("%+v.Defers(%d, 200000) = %v, want %v", tc.ts, tc.tokens, got, tc.want)
		}
	}
	if got := auto.Threshold(200_000); got != 20_000 {
		t.Errorf("Threshold = %d, want 20000", got)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"2.1.332", "2.1.332", 0}, {"2.1.99", "2.1.332", -1}, {"2.2.0", "2.1.332", 1}, {"10.0.0", "9.9.9", 1},
		{"2.1.332-beta.1", "2.1.332", -1}, {"2.1.332", "2.1.332-beta.1", 1}, {"2.1.0-a", "2.1.0-b", -1},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
