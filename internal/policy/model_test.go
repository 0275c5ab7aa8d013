package policy

import (
	"strings"
	"testing"
)

// TestListWithholdsTheModelHost: in injected-credential mode the model API's host is allowed to
// no one through the list, whatever the project's entries say — a wildcard over it, the name
// itself on another port — while the other names those entries cover stay allowed. Outside
// injected mode the same entries allow it.
func TestListWithholdsTheModelHost(t *testing.T) {
	p := Netd{Version: Version, Project: "p", Egress: []string{"*.anthropic.com", "api.anthropic.com:8443", "API.example.com"}}
	list, err := p.List()
	if err != nil {
		t.Fatal(err)
	}
	if !list.Allows("api.anthropic.com", 443) || !list.Allows("api.anthropic.com", 8443) {
		t.Fatal("login-volume mode: the entries do not allow api.anthropic.com; the test proves nothing")
	}
	for _, upstream := range []string{DefaultModelUpstream, "https://api.example.com:8443/anthropic"} {
		p.Model = &ModelAPI{Upstream: upstream}
		if _, err := Parse(p.Marshal()); err != nil {
			t.Fatal(err)
		}
		list, err := p.List()
		if err != nil {
			t.Fatal(err)
		}
		host := map[string]string{DefaultModelUpstream: "api.anthropic.com"}[upstream]
		if host == "" {
			host = "api.example.com"
		}
		for _, port := range []int{443, 8443} {
			for _, name := range []string{host, host + ".", strings.ToUpper(host)} {
				if list.Allows(name, port) {
					t.Errorf("upstream %s: the list allows %s:%d to the agent", upstream, name, port)
				}
			}
		}
		if !list.Allows("docs.anthropic.com", 443) {
			t.Errorf("upstream %s: the wildcard no longer allows docs.anthropic.com", upstream)
		}
	}
}

// TestModelAddr: an upstream named by an IP literal yields its address, which netd withholds
// from the agent (no allowlist entry can name an address, but an allowed name can resolve to
// it); an upstream named by a host name, or none, yields none.
func TestModelAddr(t *testing.T) {
	for upstream, want := range map[string]string{
		"https://192.0.2.77":                 "192.0.2.77",
		"https://192.0.2.77:8443/anthropic":  "192.0.2.77",
		"https://[::ffff:192.0.2.78]/v1":     "192.0.2.78",
		DefaultModelUpstream:                 "",
		"https://llm.example.com/anthropic":  "",
		"https://192.0.2.77.example.com:443": "",
	} {
		p := Netd{Version: Version, Project: "p", Model: &ModelAPI{Upstream: upstream}}
		got := p.ModelAddr()
		if (want == "" && got.IsValid()) || (want != "" && got.String() != want) {
			t.Errorf("ModelAddr(%s) = %v, want %q", upstream, got, want)
		}
	}
	if a := (&Netd{}).ModelAddr(); a.IsValid() {
		t.Errorf("ModelAddr without a model API = %v", a)
	}
}
