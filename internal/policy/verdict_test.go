package policy

import "testing"

func TestNetdVerdict(t *testing.T) {
	p := Netd{Version: Version, Project: "p", Egress: []string{"api.example.com", "git.example.com:22", "git.example.com:2222"},
		DefaultPorts: []int{443}}
	for _, c := range []struct {
		host string
		port int
		want string
	}{
		{"api.example.com", 0, "allowed: api.example.com:443"},
		{"git.example.com", 0, "denied: git.example.com:443 (allowed only on port 22, 2222)"},
		{"other.example.com", 8080, "denied: other.example.com:8080 (not in the allowlist)"},
	} {
		v, err := p.Verdict(c.host, c.port)
		if err != nil || v.String() != c.want {
			t.Errorf("Verdict(%s, %d) = %q, %v; want %q", c.host, c.port, v, err, c.want)
		}
	}
	bad := Netd{Egress: []string{"a.example.com"}, DefaultPorts: []int{0}}
	if _, err := bad.Verdict("a.example.com", 0); err == nil {
		t.Error("Verdict of an unlistable policy: no error")
	}
}
