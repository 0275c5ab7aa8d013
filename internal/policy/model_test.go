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
