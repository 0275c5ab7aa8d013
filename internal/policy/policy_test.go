package policy

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseLogLimit(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		want  int64 // 0: refused
	}{
		{0, DefaultLogLimit},
		{MinLogLimit, MinLogLimit},
		{MaxLogLimit, MaxLogLimit},
		{MinLogLimit - 1, 0},
		{MaxLogLimit + 1, 0},
		{-1, 0},
	} {
		p := Netd{Version: Version, Project: "p", Egress: []string{}, LogLimit: tc.limit}
		got, err := Parse(p.Marshal())
		switch {
		case tc.want == 0 && (err == nil || !strings.Contains(err.Error(), "log limit")):
			t.Errorf("log limit %d: %v, want it refused", tc.limit, err)
		case tc.want != 0 && err != nil:
			t.Errorf("log limit %d: %v", tc.limit, err)
		case tc.want != 0 && got.LogLimitBytes() != tc.want:
			t.Errorf("log limit %d: %d bytes, want %d", tc.limit, got.LogLimitBytes(), tc.want)
		}
	}
}

func TestModelUpstream(t *testing.T) {
	for raw, want := range map[string]string{
		"https://api.anthropic.com":               "https://api.anthropic.com:443",
		"https://llm.example.com:8443/anthropic/": "https://llm.example.com:8443/anthropic",
	} {
		u, err := ModelUpstream(raw)
		if err != nil || u.String() != want {
			t.Errorf("ModelUpstream(%q) = %v, %v; want %s", raw, u, err, want)
		}
	}
	for _, bad := range []string{"http://api.anthropic.com", "https://user:pw@h", "https://h/?q=1", "https://h/#f",
		"https:///v1", "https://h/a/../b", "https://h//x", "https://h/%2e%2e", "https://h:0", "ftp://h"} {
		if _, err := ModelUpstream(bad); err == nil {
			t.Errorf("ModelUpstream(%q) accepted", bad)
		}
	}
	p := Netd{Version: Version, Project: "p", Model: &ModelAPI{Upstream: "http://x"}}
	if _, err := Parse(p.Marshal()); err == nil {
		t.Error("Parse accepted a plain-http model upstream")
	}
}

func TestCredentialKind(t *testing.T) {
	if CredentialKind("sk-ant-oat01-abc") != CredentialOAuth || CredentialKind("sk-ant-api03-abc") != CredentialAPIKey ||
		CredentialKind("corp-key") != CredentialAPIKey || CredentialKind(CredentialPlaceholder) != CredentialAPIKey {
		t.Error("credential kinds told apart wrongly")
	}
}

func TestNetdCheck(t *testing.T) {
	p := Netd{Version: Version, Project: "p", Egress: []string{"api.example.com", "git.example.com:22", "claude.ai"},
		DefaultPorts: []int{443}, Mandatory: []string{"claude.ai"}}
	for _, c := range []struct {
		host      string
		port      int
		ok        bool
		checked   int
		portsWant string
	}{
		{"api.example.com", 0, true, 443, "[443]"},
		{"api.example.com", 80, false, 80, "[443]"},
		{"git.example.com", 0, false, 443, "[22]"},
		{"git.example.com", 22, true, 22, "[22]"},
		{"other.example.com", 0, false, 443, "[]"},
	} {
		ok, checked, ports, err := p.Check(c.host, c.port)
		if err != nil || ok != c.ok || checked != c.checked || fmt.Sprint(ports) != c.portsWant {
			t.Errorf("Check(%s, %d) = %v, %d, %v, %v; want %v, %d, %s", c.host, c.port, ok, checked, ports, err, c.ok, c.checked, c.portsWant)
		}
	}
	if !p.IsMandatory("claude.ai") || p.IsMandatory("api.example.com") {
		t.Error("IsMandatory does not follow Mandatory")
	}
	bad := Netd{Egress: []string{"a.example.com"}, DefaultPorts: []int{0}}
	if _, _, _, err := bad.Check("a.example.com", 0); err == nil {
		t.Error("Check accepted a default port of 0")
	}
}
