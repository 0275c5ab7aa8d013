package egress

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// nameOfLen returns a valid host name of exactly n characters (n >= 3), made of 50-character
// labels and a shorter last one.
func nameOfLen(n int) string {
	var b strings.Builder
	for n-b.Len() > 63 {
		b.WriteString(strings.Repeat("a", 50))
		b.WriteByte('.')
	}
	b.WriteString(strings.Repeat("z", n-b.Len()))
	return b.String()
}

func TestNameOfLen(t *testing.T) {
	for _, n := range []int{3, 63, 64, 65, 114, 115, 251, 252, 253, 254} {
		s := nameOfLen(n)
		if len(s) != n {
			t.Errorf("len(nameOfLen(%d)) = %d", n, len(s))
		}
		if reason := checkName(s); reason != "" && n <= MaxNameLen {
			t.Errorf("nameOfLen(%d) = %q: %s", n, s, reason)
		}
	}
}

var (
	label63  = strings.Repeat("a", 63)
	label64  = strings.Repeat("a", 64)
	name251  = nameOfLen(251)
	name252  = nameOfLen(252)
	name253  = nameOfLen(253)
	name254  = nameOfLen(254)
	longJunk = strings.Repeat("a", 300)
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Entry
		str  string // canonical String()
	}{
		{"plain", "example.com", Entry{Host: "example.com"}, "example.com"},
		{"two short labels", "a.b", Entry{Host: "a.b"}, "a.b"},
		{"deep", "a.b.c.d.example.com", Entry{Host: "a.b.c.d.example.com"}, "a.b.c.d.example.com"},
		{"upper case folded", "Example.COM", Entry{Host: "example.com"}, "example.com"},
		{"trailing dot removed", "example.com.", Entry{Host: "example.com"}, "example.com"},
		{"port", "github.com:22", Entry{Host: "github.com", Port: 22}, "github.com:22"},
		{"port with trailing dot and case", "GitHub.com.:22", Entry{Host: "github.com", Port: 22}, "github.com:22"},
		{"lowest port", "example.com:1", Entry{Host: "example.com", Port: 1}, "example.com:1"},
		{"highest port", "example.com:65535", Entry{Host: "example.com", Port: 65535}, "example.com:65535"},
		{"explicit 443 is kept", "example.com:443", Entry{Host: "example.com", Port: 443}, "example.com:443"},
		{"wildcard", "*.example.com", Entry{Host: "example.com", Wildcard: true}, "*.example.com"},
		{"wildcard case and dot", "*.Example.COM.", Entry{Host: "example.com", Wildcard: true}, "*.example.com"},
		{"wildcard port", "*.example.com:8443", Entry{Host: "example.com", Wildcard: true, Port: 8443}, "*.example.com:8443"},
		// No public-suffix list: two labels are enough, so *.co.uk is accepted.
		{"wildcard on a public suffix", "*.co.uk", Entry{Host: "co.uk", Wildcard: true}, "*.co.uk"},
		{"wildcard deep", "*.a.b.example.com", Entry{Host: "a.b.example.com", Wildcard: true}, "*.a.b.example.com"},
		{"punycode", "xn--80ak6aa92e.com", Entry{Host: "xn--80ak6aa92e.com"}, "xn--80ak6aa92e.com"},
		{"punycode upper", "XN--Bcher-KVA.example", Entry{Host: "xn--bcher-kva.example"}, "xn--bcher-kva.example"},
		{"hyphen inside", "a-b.ex-ample.com", Entry{Host: "a-b.ex-ample.com"}, "a-b.ex-ample.com"},
		{"leading digit", "1password.com", Entry{Host: "1password.com"}, "1password.com"},
		{"numeric non-final labels", "123.456.example.com", Entry{Host: "123.456.example.com"}, "123.456.example.com"},
		// Only the last label decides whether a name reads as a number, as in URL parsers.
		{"hex-looking first label", "0x7f.example.com", Entry{Host: "0x7f.example.com"}, "0x7f.example.com"},
		{"IP-looking prefix of a real name", "127.0.0.1.nip.io", Entry{Host: "127.0.0.1.nip.io"}, "127.0.0.1.nip.io"},
		{"TLD that starts with hex digits", "example.cafe", Entry{Host: "example.cafe"}, "example.cafe"},
		{"last label 0x and a non-hex letter", "example.0xg", Entry{Host: "example.0xg"}, "example.0xg"},
		{"label of 63", label63 + ".com", Entry{Host: label63 + ".com"}, label63 + ".com"},
		{"name of 253", name253, Entry{Host: name253}, name253},
		{"name of 253 with trailing dot", name253 + ".", Entry{Host: name253}, name253},
		{"name of 253, dot and port", strings.ToUpper(name253) + ".:65535", Entry{Host: name253, Port: 65535}, name253 + ":65535"},
		{"wildcard of 251", "*." + name251, Entry{Host: name251, Wildcard: true}, "*." + name251},
		{"wildcard of 251, dot and port", "*." + name251 + ".:65535", Entry{Host: name251, Wildcard: true, Port: 65535}, "*." + name251 + ":65535"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q) error = %v, want nil", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
			if s := got.String(); s != tc.str {
				t.Errorf("Parse(%q).String() = %q, want %q", tc.in, s, tc.str)
			}
			again, err := Parse(got.String())
			if err != nil || again != got {
				t.Errorf("Parse(%q) = %v, %v; want %v, nil (round trip)", got.String(), again, err, got)
			}
		})
	}
}

func TestParseRefused(t *testing.T) {
	const (
		control   = "space or control character"
		notASCII  = "is not ASCII"
		pathPart  = "path, query or user part"
		isURL     = "is a URL"
		isIP      = "is an IP address"
		numeric   = "ends in a numeric label"
		badWild   = `wildcard that is not a leading "*."`
		tooBroad  = "is too broad"
		empty     = "has an empty label"
		noHost    = "has no host name"
		single    = "is a single label"
		badPort   = "has an invalid port"
		portRange = "outside 1–65535"
	)
	tests := []struct {
		name   string
		in     string
		reason string // a fragment of Error.Reason
		hint   bool   // whether a non-empty hint is expected
	}{
		{"empty", "", "is empty", true},
		{"far too long", longJunk, "longer than a host name can be", false},

		// Shell, quoting and file-format injection.
		{"space", "example.com evil.com", control, false},
		{"leading space", " example.com", control, false},
		{"trailing space", "example.com ", control, false},
		{"newline", "example.com\nevil.com", control, false},
		{"trailing newline", "example.com\n", control, false},
		{"CRLF", "example.com\r\n", control, false},
		{"tab", "\texample.com", control, false},
		{"NUL", "example.com\x00", control, false},
		{"NUL inside", "exam\x00ple.com", control, false},
		{"escape sequence", "\x1b[31mexample.com", control, false},
		{"DEL", "example.com\x7f", control, false},
		{"double quotes", `"example.com"`, `"\"" is not allowed`, false},
		{"single quotes", "'example.com'", `"'" is not allowed`, false},
		{"command substitution", "$(id).example.com", `"$" is not allowed`, false},
		{"variable", "${HOME}.example.com", `"$" is not allowed`, false},
		{"backticks", "`id`.example.com", "\"`\" is not allowed", false},
		{"semicolon", "example.com;id", `";" is not allowed`, false},
		{"semicolon and space", "example.com; rm -rf /", control, false},
		{"ampersand", "a&b.example.com", `"&" is not allowed`, false},
		{"pipe", "a|b.example.com", `"|" is not allowed`, false},
		{"redirect", "a>b.example.com", `">" is not allowed`, false},
		{"braces", "{a,b}.example.com", `"{" is not allowed`, false},
		{"comma", "a,b.example.com", `"," is not allowed`, false},
		{"backslash", `a\b.example.com`, `"\\" is not allowed`, false},
		{"equals", "a=b.example.com", `"=" is not allowed`, false},
		{"bang", "a!b.example.com", `"!" is not allowed`, false},
		{"nft comment", "example.com#x", pathPart, true},
		{"json brace", `example.com"}`, `"\"" is not allowed`, false},
		{"underscore", "_acme.example.com", `"_" is not allowed`, false},
		{"dot dot slash", "../etc/passwd", pathPart, true},
		{"path traversal after host", "example.com/../x", pathPart, true},
		{"percent-encoded dot", "example%2ecom", `"%" is not allowed`, false},
		{"percent-encoded NUL", "example.com%00", `"%" is not allowed`, false},

		// Unicode, including look-alikes and characters that case-fold to ASCII.
		{"Cyrillic a", "exаmple.com", notASCII, true},
		{"fullwidth dot", "example．com", notASCII, true},
		{"ideographic dot", "example。com", notASCII, true},
		{"fullwidth letter", "ｅxample.com", notASCII, true},
		{"zero-width joiner", "exam\u200dple.com", notASCII, true},
		{"zero-width space", "example\u200b.com", notASCII, true},
		{"byte order mark", "\ufeffexample.com", notASCII, true},
		{"Kelvin sign lowers to k", "\u212aexample.com", notASCII, true},
		{"long s uppers to S", "\u017fexample.com", notASCII, true},
		{"dotless i", "\u0131example.com", notASCII, true},
		{"latin-1 letter", "bücher.example", notASCII, true},
		{"invalid UTF-8", "\xffexample.com", notASCII, true},
		{"no-break space", "example.com\u00a0", notASCII, true},
		{"right-to-left override", "\u202eexample.com", notASCII, true},

		// IP literals, in every spelling. Egress is decided by name only.
		{"IPv4", "1.2.3.4", isIP, true},
		{"IPv4 trailing dot", "1.2.3.4.", isIP, true},
		{"IPv4 with port", "1.2.3.4:443", isIP, true},
		{"IPv4 trailing dot and port", "1.2.3.4.:443", isIP, true},
		{"IPv4 loopback", "127.0.0.1", isIP, true},
		{"IPv6 loopback", "::1", isIP, true},
		{"IPv6 bracketed", "[::1]", isIP, true},
		{"IPv6 bracketed with port", "[::1]:443", isIP, true},
		{"IPv6 full", "2001:db8::1", isIP, true},
		{"IPv6 upper", "2001:DB8::ABCD", isIP, true},
		{"IPv6 with zone", "fe80::1%eth0", isIP, true},
		{"IPv6 bracketed zone and port", "[fe80::1%25eth0]:443", isIP, true},
		{"IPv4-mapped IPv6", "::ffff:1.2.3.4", isIP, true},
		{"IPv4-mapped bracketed", "[::ffff:127.0.0.1]:22", isIP, true},
		{"unspecified", "0.0.0.0", isIP, true},
		// Short, octal, hex and integer IPv4 forms are accepted by inet_aton and by URL parsers
		// (a WHATWG host that "ends in a number" is parsed as IPv4), so a name whose last label is
		// a decimal or 0x-hex number is refused; only the reason differs from a literal.
		{"IPv4 short form", "127.1", numeric, false},
		{"IPv4 short form with port", "127.1:22", numeric, false},
		{"IPv4 octal", "0177.0.0.1", numeric, false},
		{"IPv4 integer", "2130706433", numeric, false},
		{"IPv4 five parts", "1.2.3.4.5", numeric, false},
		{"IPv4 hex last", "0x7f.1", numeric, false},
		{"IPv4 hex parts", "0x7f.0x1", numeric, false},
		{"IPv4 hex upper", "0X7F.0X0.0X0.0X1", numeric, false},
		{"IPv4 hex integer", "0x7f000001", numeric, false},
		{"hex last label", "example.0xff", numeric, false},
		{"bare 0x last label", "example.0x", numeric, false},
		{"numeric TLD", "example.123", numeric, false},

		// Wildcards.
		{"star alone", "*", badWild, true},
		{"star with port", "*:443", badWild, true},
		{"star dot", "*.", badWild, true},
		{"star of a TLD", "*.com", tooBroad, true},
		{"star of a TLD with dot", "*.com.", tooBroad, true},
		{"star of a TLD with port", "*.com:22", tooBroad, true},
		{"star of star", "*.*", badWild, true},
		{"inner star", "a.*.com", badWild, true},
		{"double star", "**.x.com", badWild, true},
		{"two wildcards", "*.*.x.com", badWild, true},
		{"star glued to label", "*x.com", badWild, true},
		{"trailing star", "x.com.*", badWild, true},
		{"star suffix in label", "x*.com", badWild, true},
		{"star of an IP", "*.1.2.3.4", isIP, true},
		{"star of a wildcard-too-long base", "*." + name252, "too long", false},

		// Label and name structure.
		{"leading dot", ".example.com", empty, true},
		{"double dot", "example..com", empty, false},
		{"two trailing dots", "example.com..", empty, false},
		{"dot", ".", noHost, false},
		{"dots", "..", empty, false},
		{"leading hyphen", "-a.example.com", "hyphen", false},
		{"trailing hyphen", "a-.example.com", "hyphen", false},
		{"hyphen label", "-.example.com", "hyphen", false},
		{"label of 64", label64 + ".com", "longer than 63", false},
		{"name of 254", name254, "longer than 253", false},
		{"name of 254 with dot", name254 + ".", "longer than 253", false},
		{"single label", "localhost", single, true},
		{"single label with dot", "localhost.", single, true},
		{"single label with port", "localhost:22", single, true},
		{"TLD", "com", single, true},
		{"brackets around a name", "[example.com]", isIP, true},

		// Ports.
		{"port 0", "example.com:0", portRange, true},
		{"port 65536", "example.com:65536", portRange, true},
		{"port 99999", "example.com:99999", portRange, true},
		{"port of six digits", "example.com:100000", badPort, true},
		{"plus sign", "example.com:+1", badPort, true},
		{"minus sign", "example.com:-1", badPort, true},
		{"leading zero", "example.com:01", "leading zero", true},
		{"leading zeros", "example.com:00022", "leading zero", true},
		{"port zero padded", "example.com:00", "leading zero", true},
		{"trailing letters", "example.com:22a", badPort, true},
		{"hex port", "example.com:0x16", badPort, true},
		{"trailing colon", "example.com:", badPort, true},
		{"colon only", ":", badPort, true},
		{"port only", ":443", noHost, false},
		{"two ports", "example.com:22:33", "more than one colon", true},
		{"port with dot", "example.com:22.", badPort, true},
		{"space before port", "example.com: 22", control, false},
		{"port then path", "example.com:443/", pathPart, true},

		// URLs and their parts.
		{"https URL", "https://example.com", isURL, true},
		{"URL with everything", "https://user:pw@Example.COM:8443/path?q=1#f", isURL, true},
		{"URL to an IP", "http://1.2.3.4/", isURL, true},
		{"file URL", "file:///etc/passwd", isURL, true},
		{"URL with newline", "https://evil.com\n/", isURL, true},
		{"scheme-relative", "//example.com", pathPart, true},
		{"path", "example.com/path", pathPart, true},
		{"query", "example.com?q", pathPart, true},
		{"user", "user@example.com", pathPart, true},
		{"mailto", "mailto:a@example.com", pathPart, true},
		{"scheme without slashes", "http:example.com", badPort, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tc.in, got, tc.reason)
			}
			if got != (Entry{}) {
				t.Errorf("Parse(%q) = %#v with error, want the zero Entry", tc.in, got)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Parse(%q) error = %T, want *Error", tc.in, err)
			}
			if perr.Input != tc.in {
				t.Errorf("Parse(%q) Error.Input = %q, want the input", tc.in, perr.Input)
			}
			if !strings.Contains(perr.Reason, tc.reason) {
				t.Errorf("Parse(%q) Reason = %q, want it to contain %q", tc.in, perr.Reason, tc.reason)
			}
			if hint := perr.HintText(); (hint != "") != tc.hint {
				t.Errorf("Parse(%q) HintText() = %q, want a hint: %v", tc.in, hint, tc.hint)
			}
			checkErrorText(t, tc.in, perr)
		})
	}
}

// checkErrorText fails if the text of a refusal could carry the input's control characters or
// other untrusted bytes onto a terminal: Error() quotes the input, Reason and Hint are built only
// from fixed text and validated parts.
func checkErrorText(t *testing.T, in string, e *Error) {
	t.Helper()
	for _, field := range []struct{ name, s string }{
		{"Error()", e.Error()}, {"Reason", e.Reason}, {"Hint", e.Hint},
	} {
		if !utf8.ValidString(field.s) {
			t.Errorf("Parse(%q) %s = %q, not valid UTF-8", in, field.name, field.s)
		}
		for _, r := range field.s {
			if r < ' ' || r == 0x7f || r > 0x7e && r != '…' && r != '–' {
				t.Errorf("Parse(%q) %s = %q, contains %U", in, field.name, field.s, r)
				break
			}
		}
	}
}

func TestParseHints(t *testing.T) {
	tests := []struct {
		in   string
		hint string
	}{
		{"https://example.com", "write only the host: example.com"},
		{"https://user:pw@Example.COM:8443/path?q=1#f", "write only the host: example.com:8443"},
		{"HTTP://Example.com.", "write only the host: example.com"},
		{"https://*.example.com/", "write only the host: *.example.com"},
		{"http://1.2.3.4/", "write only the host, e.g. example.com"},
		{"https://evil.com\n/", "write only the host, e.g. example.com"},
		{"https://$(id)/", "write only the host, e.g. example.com"},
		{"https://", "write only the host, e.g. example.com"},
		{"localhost", "write the full name, e.g. localhost.example.com"},
		{"*.com", "write *.example.com, not *.com"},
		{".example.com", "write *.example.com for its subdomains, or example.com for the name itself"},
		{"example.com:01", "write a port as host:port with 1–65535, e.g. github.com:22"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.in)
		var perr *Error
		if !errors.As(err, &perr) {
			t.Errorf("Parse(%q) error = %v, want *Error", tc.in, err)
			continue
		}
		if got := perr.HintText(); got != tc.hint {
			t.Errorf("Parse(%q) HintText() = %q, want %q", tc.in, got, tc.hint)
		}
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"exam ple.com", `"exam ple.com" is not a host name: it contains a space or control character`},
		// A look-alike is spelled out, not shown as the name it imitates.
		{"exаmple.com", `"ex\u0430mple.com" is not ASCII`},
		{"example.com\n", `"example.com\n" is not a host name: it contains a space or control character`},
		{"example.com:22a", `"example.com:22a" has an invalid port "22a"`},
	}
	for _, tc := range tests {
		_, err := Parse(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) error = %v, want %s", tc.in, err, tc.want)
		}
	}
}

func TestMustParse(t *testing.T) {
	if got, want := MustParse("api.anthropic.com"), (Entry{Host: "api.anthropic.com"}); got != want {
		t.Errorf("MustParse = %v, want %v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("MustParse(%q) did not panic", "https://x")
		}
	}()
	MustParse("https://x")
}

// The canonical string goes verbatim into rendered nft, JSON, shell and Dockerfile text, so it
// must need no quoting in any of them.
func TestStringIsInert(t *testing.T) {
	for _, s := range []string{"example.com", "*.Example.com.:22", "github.com:22", name253 + ":65535"} {
		e := MustParse(s)
		c := e.String()
		for i := 0; i < len(c); i++ {
			if !isCanonicalByte(c[i]) {
				t.Errorf("MustParse(%q).String() = %q contains %q", s, c, c[i])
			}
		}
		b, err := json.Marshal(c)
		if err != nil || string(b) != `"`+c+`"` {
			t.Errorf("json.Marshal(%q) = %s, %v; want no escaping", c, b, err)
		}
	}
}

func isCanonicalByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '*' || c == ':'
}

func TestNormalizeName(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"example.com", "example.com", true},
		{"Example.COM", "example.com", true},
		{"example.com.", "example.com", true},
		{"A.B.Example.Com.", "a.b.example.com", true},
		{"xn--80ak6aa92e.com", "xn--80ak6aa92e.com", true},
		// A single label is a valid name on the wire; no entry can cover it.
		{"localhost", "localhost", true},
		{"localhost.", "localhost", true},
		{name253, name253, true},
		{name253 + ".", name253, true},
		{strings.ToUpper(name253), name253, true},

		{"", "", false},
		{".", "", false},
		{"..", "", false},
		{"example.com..", "", false},
		{".example.com", "", false},
		{"a..b", "", false},
		{name254, "", false},
		{name254 + ".", "", false},
		{label64 + ".com", "", false},
		{"*.example.com", "", false},
		{"*", "", false},
		{"example.com:443", "", false},
		{"1.2.3.4", "", false},
		{"1.2.3.4.", "", false},
		{"127.1", "", false},
		{"0x7f.0x1", "", false},
		{"example.0x1", "", false},
		{"::1", "", false},
		{"[::1]", "", false},
		{"exa mple.com", "", false},
		{"example.com\x00", "", false},
		{"example.com\n", "", false},
		{"\texample.com", "", false},
		{"example.com\x7f", "", false},
		{"exаmple.com", "", false},       // Cyrillic а
		{"example．com", "", false},       // fullwidth dot
		{"exam\u200dple.com", "", false}, // zero-width joiner
		{"\u212aexample.com", "", false}, // Kelvin sign, lower-cases to k
		{"\xffexample.com", "", false},   // invalid UTF-8
		{"_acme-challenge.example.com", "", false},
		{"-a.example.com", "", false},
		{"a-.example.com", "", false},
		{"example.com/x", "", false},
		{"user@example.com", "", false},
		{"$(id).example.com", "", false},
	}
	for _, tc := range tests {
		got, ok := NormalizeName(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("NormalizeName(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
		if ok {
			if again, ok2 := NormalizeName(got); again != got || !ok2 {
				t.Errorf("NormalizeName(%q) = %q, %v; want it unchanged", got, again, ok2)
			}
		}
	}
}

func TestEntryMatchesName(t *testing.T) {
	tests := []struct {
		entry string
		name  string
		want  bool
	}{
		{"*.allowed.test", "a.allowed.test", true},
		{"*.allowed.test", "a.b.allowed.test", true},
		{"*.allowed.test", "x-y.z.allowed.test", true},
		{"*.allowed.test", "allowed.test", false},
		{"*.allowed.test", "xallowed.test", false},
		{"*.allowed.test", "a.xallowed.test", false},
		{"*.allowed.test", "allowed.test.evil", false},
		{"*.allowed.test", "a.allowed.test.evil", false},
		{"*.allowed.test", "test", false},
		{"*.allowed.test", "", false},
		{"*.allowed.test:22", "a.allowed.test", true}, // any port
		{"exact.test", "exact.test", true},
		{"exact.test", "a.exact.test", false},
		{"exact.test", "xexact.test", false},
		{"exact.test", "test", false},
		{"exact.test", "exact.test.evil", false},
		{"exact.test:22", "exact.test", true},

		// The query side is normalised: case and one trailing dot do not matter.
		{"*.allowed.test", "A.Allowed.TEST", true},
		{"*.allowed.test", "a.allowed.test.", true},
		{"exact.test", "EXACT.test.", true},
		// Invalid names never match, even when they end in ".allowed.test".
		{"*.allowed.test", ".allowed.test", false},
		{"*.allowed.test", "..allowed.test", false},
		{"*.allowed.test", "-.allowed.test", false},
		{"*.allowed.test", "a b.allowed.test", false},
		{"*.allowed.test", "a\x00.allowed.test", false},
		{"*.allowed.test", "_x.allowed.test", false},
		{"*.allowed.test", "*.allowed.test", false},
		{"*.allowed.test", "a.allowed.test..", false},
		{"*.allowed.test", "a.allowed.test:443", false},
		{"*.allowed.test", "a.allowеd.test", false}, // Cyrillic е
		{"exact.test", "exact.test..", false},
		{"*.x.b", strings.Repeat("a.", 125) + "x.b", true},  // 253 characters
		{"*.x.b", strings.Repeat("a.", 126) + "x.b", false}, // 255 characters
		{"*." + name251, "a." + name251, true},              // 253 characters
		{"*." + name251, "ab." + name251, false},            // 254 characters
	}
	for _, tc := range tests {
		e := MustParse(tc.entry)
		if got := e.MatchesName(tc.name); got != tc.want {
			t.Errorf("MustParse(%q).MatchesName(%q) = %v, want %v", tc.entry, tc.name, got, tc.want)
		}
	}
}

func TestEntryString(t *testing.T) {
	tests := []struct {
		e    Entry
		want string
	}{
		{Entry{Host: "example.com"}, "example.com"},
		{Entry{Host: "example.com", Port: 22}, "example.com:22"},
		{Entry{Host: "example.com", Wildcard: true}, "*.example.com"},
		{Entry{Host: "example.com", Wildcard: true, Port: 8443}, "*.example.com:8443"},
	}
	for _, tc := range tests {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.e, got, tc.want)
		}
	}
}
