package detect

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/egress"
)

// FuzzSuggestions checks that whatever the host's registry settings or a remote URL hold, every
// suggestion is an egress entry in canonical form that carries no credentials.
func FuzzSuggestions(f *testing.F) {
	for _, s := range []string{
		"https://proxy.example.test,direct", "sum.example.test+key https://mirror.example.test/x",
		"git@git.example.test:org/x@y.git", "ssh://u:p@git.example.test:2222/x", `https://"git.example.test"/x # c`,
		"http://localhost:3000|https://[::1]:8443", "proxy.example.test:8443/go",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got []string
		got = append(got, Egress([]string{"go", "node"}, Registries{GoProxy: s, GoSumDB: s, NPM: s})...)
		got = append(got, remoteEntries(configValue(s))...)
		for _, g := range got {
			e, err := egress.Parse(g)
			if err != nil || e.String() != g {
				t.Fatalf("suggestion %q from %q: %v, canonical %q", g, s, err, e.String())
			}
			if strings.Contains(g, "@") {
				t.Fatalf("suggestion %q from %q carries a user part", g, s)
			}
		}
	})
}
