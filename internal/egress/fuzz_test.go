package egress

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Seeds beyond those checked into testdata/fuzz: every table case is a seed too.
var fuzzSeeds = []string{
	"example.com", "*.example.com:22", "Example.COM.:443", "github.com:22", "xn--80ak6aa92e.com",
	"https://user@example.com:8443/x", "1.2.3.4:443", "[::1]:443", "0x7f.0x1", "*.com", "a.*.com",
	"example.com:01", ".example.com", "exаmple.com", "example．com", "$(id).example.com",
	"example.com\n", "*." + name252, name253 + ".:65535",
}

// FuzzParse checks that Parse never panics, that a refusal is an *Error whose text carries no
// raw input, and that an accepted entry has a canonical form that round-trips and can be
// written verbatim into nft, JSON, shell or a Dockerfile.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q) error = %T, want *Error", s, err)
			}
			if perr.Input != s || perr.Reason == "" || e != (Entry{}) {
				t.Fatalf("Parse(%q) = %#v, %#v", s, e, perr)
			}
			checkErrorText(t, s, perr)
			return
		}
		c := e.String()
		for i := 0; i < len(c); i++ {
			if !isCanonicalByte(c[i]) {
				t.Fatalf("Parse(%q).String() = %q contains %q", s, c, c[i])
			}
		}
		if strings.Contains(e.Host, "*") || strings.Count(c, "*") > 1 ||
			strings.Contains(c, "*") && !strings.HasPrefix(c, "*.") {
			t.Fatalf("Parse(%q).String() = %q: a wildcard other than a leading \"*.\"", s, c)
		}
		if e.Port < 0 || e.Port > 65535 {
			t.Fatalf("Parse(%q).Port = %d", s, e.Port)
		}
		if n, ok := NormalizeName(e.Host); !ok || n != e.Host {
			t.Fatalf("Parse(%q).Host = %q, NormalizeName = %q, %v", s, e.Host, n, ok)
		}
		if !strings.Contains(e.Host, ".") {
			t.Fatalf("Parse(%q).Host = %q is a single label", s, e.Host)
		}
		if e.Wildcard && len(e.Host) > MaxNameLen-2 {
			t.Fatalf("Parse(%q) = %q: no subdomain fits in %d characters", s, c, MaxNameLen)
		}
		again, err := Parse(c)
		if err != nil {
			t.Fatalf("Parse(%q) = %v, but Parse(%q) error = %v", s, e, c, err)
		}
		if diff := cmp.Diff(e, again); diff != "" {
			t.Fatalf("Parse(Parse(%q).String()) mismatch (-first +second):\n%s", s, diff)
		}
		// Spelling variants of an accepted (hence ASCII) input parse to the same entry.
		if up, err := Parse(strings.ToUpper(s)); err != nil || up != e {
			t.Fatalf("Parse(%q) = %v, %v; want %v", strings.ToUpper(s), up, err, e)
		}
	})
}

// FuzzMatch builds a list from comma-separated entries (invalid ones are skipped) and checks
// List against a naive matcher, that names NormalizeName refuses are never allowed, and that a
// name is never covered by a wildcard of itself.
func FuzzMatch(f *testing.F) {
	f.Add("*.allowed.test", "a.allowed.test", 443)
	f.Add("*.allowed.test", "allowed.test", 443)
	f.Add("*.allowed.test", "xallowed.test", 443)
	f.Add("*.allowed.test", "..allowed.test", 443)
	f.Add("exact.test", "a.exact.test", 443)
	f.Add("github.com:22,github.com", "GitHub.com.", 22)
	f.Add("*.a.test:8443,a.test", "x.A.test", 8443)
	f.Add("*.x.b", strings.Repeat("a.", 125)+"x.b", 443)
	f.Add("*.allowed.test", "a.allowed.test\x00", 443)
	f.Add("*.allowed.test", "a.allowеd.test", 443)
	f.Add("exact.test", "exact.test", 0)
	f.Fuzz(func(t *testing.T, entries, name string, port int) {
		var list []Entry
		for _, s := range strings.Split(entries, ",") {
			if e, err := Parse(s); err == nil {
				list = append(list, e)
			}
		}
		l := NewList(list, nil)
		ports := l.Ports(name)
		n, ok := NormalizeName(name)
		if !ok {
			if ports != nil || l.AllowsName(name) || l.Allows(name, port) {
				t.Fatalf("NormalizeName(%q) refuses it, but Ports = %v, Allows(%d) = %v",
					name, ports, port, l.Allows(name, port))
			}
			for _, e := range list {
				if e.MatchesName(name) {
					t.Fatalf("NormalizeName(%q) refuses it, but %v matches it", name, e)
				}
			}
			return
		}
		if again, ok := NormalizeName(n); !ok || again != n {
			t.Fatalf("NormalizeName(%q) = %q, %v; want it unchanged", n, again, ok)
		}

		// Naive reference: scan every entry.
		var want []int
		for _, e := range list {
			covered := n == e.Host
			if e.Wildcard {
				covered = strings.HasSuffix(n, "."+e.Host)
			}
			if got := e.MatchesName(name); got != covered {
				t.Fatalf("%v.MatchesName(%q) = %v, want %v", e, name, got, covered)
			}
			if !covered {
				continue
			}
			if e.Port != 0 {
				want = append(want, e.Port)
			} else {
				want = append(want, DefaultPort)
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		if len(want) == 0 {
			want = nil
		}
		if diff := cmp.Diff(want, ports); diff != "" {
			t.Fatalf("entries %q: Ports(%q) mismatch (-naive +got):\n%s", entries, name, diff)
		}
		if got := l.Allows(name, port); got != slices.Contains(want, port) {
			t.Fatalf("entries %q: Allows(%q, %d) = %v, want %v", entries, name, port, got, !got)
		}
		if got := l.AllowsName(name); got != (want != nil) {
			t.Fatalf("entries %q: AllowsName(%q) = %v, want %v", entries, name, got, !got)
		}

		// Case and a trailing dot on the query side change nothing.
		if diff := cmp.Diff(ports, l.Ports(strings.ToUpper(n)+".")); diff != "" {
			t.Fatalf("Ports(%q) differs from Ports(%q):\n%s", strings.ToUpper(n)+".", name, diff)
		}

		// A name is never a strict subdomain of itself.
		self := Entry{Host: n, Wildcard: true}
		if self.MatchesName(name) || self.MatchesName(n) {
			t.Fatalf("%v matches %q", self, name)
		}
		if e, err := Parse("*." + n); err == nil {
			if sl := NewList([]Entry{e}, nil); sl.AllowsName(name) {
				t.Fatalf("a list of %v allows %q", e, name)
			}
		}
		// Nor does an exact entry cover its subdomains.
		if len(n) <= MaxNameLen-2 {
			exact := NewList([]Entry{{Host: n}}, nil)
			if exact.AllowsName("a." + n) {
				t.Fatalf("a list of %q allows a.%s", n, n)
			}
		}
	})
}
