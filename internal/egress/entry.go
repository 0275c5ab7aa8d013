package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPort is the port an entry without one is allowed on when the list has no other default.
const DefaultPort = 443

// MaxNameLen is the longest host name DNS can carry in presentation form, without the trailing dot.
const MaxNameLen = 253

// Entry is one parsed, canonical allowlist entry.
type Entry struct {
	Host     string // lower-case, no trailing dot, without the "*." of a wildcard
	Wildcard bool   // true for "*.Host": strict subdomains of Host
	Port     int    // 0: the list's default ports
}

// Error is a refused entry. Reason says what is wrong; Hint, when set, says how to write it.
type Error struct {
	Input  string
	Reason string
	Hint   string
}

// Error quotes the input with non-ASCII characters escaped, so that a look-alike such as a
// Cyrillic "а" is visible in the message and no control character reaches a terminal.
func (e *Error) Error() string { return fmt.Sprintf("%+q %s", e.Input, e.Reason) }

// HintText returns the fix for the refused entry, or "".
func (e *Error) HintText() string { return e.Hint }

// Parse validates s and returns its canonical [Entry].
func Parse(s string) (Entry, error) {
	fail := func(reason, hint string) (Entry, error) {
		return Entry{}, &Error{Input: s, Reason: reason, Hint: hint}
	}
	if s == "" {
		return fail("is empty", "write a host name such as example.com")
	}
	// The longest acceptable entries are a 253-character name or "*." and a 251-character base,
	// each followed by "." and ":65535".
	if len(s) > MaxNameLen+7 {
		return fail("is longer than a host name can be", "")
	}
	if strings.Contains(s, "://") {
		// The hint names the host only if it is itself a valid entry, and then in canonical
		// form, so that no unvalidated byte of the input (a newline, an escape sequence, an IP
		// address) is echoed as advice.
		hint := "write only the host, e.g. example.com"
		if h, err := Parse(hostOfURL(s)); err == nil {
			hint = "write only the host: " + h.String()
		}
		return fail("is a URL, not a host name", hint)
	}
	for _, r := range s {
		switch {
		case r <= ' ' || r == 0x7f:
			return fail("is not a host name: it contains a space or control character", "")
		case r > 0x7f:
			return fail("is not ASCII", "write internationalised names in punycode (xn--…)")
		}
	}
	if strings.ContainsAny(s, "/?#@") {
		return fail("is not a host name: it contains a path, query or user part", "write only the host, e.g. example.com")
	}
	if isIPLiteral(s) {
		return fail("is an IP address; egress is decided by name", "allow the host name that serves it instead")
	}
	host, port, err := splitPort(s)
	if err != nil {
		return fail(err.Error(), "write a port as host:port with 1–65535, e.g. github.com:22")
	}
	e := Entry{Port: port}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		e.Wildcard = true
		host = rest
	}
	if strings.Contains(host, "*") {
		return fail(`has a wildcard that is not a leading "*."`, "write *.example.com for every subdomain of example.com")
	}
	if isIPLiteral(host) {
		return fail("is an IP address; egress is decided by name", "allow the host name that serves it instead")
	}
	if reason := checkName(host); reason != "" {
		hint := ""
		// ".example.com" is how some tools spell a domain and its subdomains.
		if rest, ok := strings.CutPrefix(host, "."); ok && !e.Wildcard && checkName(rest) == "" && strings.Contains(rest, ".") {
			hint = "write *." + rest + " for its subdomains, or " + rest + " for the name itself"
		}
		return fail(reason, hint)
	}
	if strings.Count(host, ".") == 0 {
		if e.Wildcard {
			return fail("is too broad: a wildcard needs a domain of at least two labels", "write *.example.com, not *.com")
		}
		return fail("is a single label, not a fully qualified host name", "write the full name, e.g. "+host+".example.com")
	}
	if e.Wildcard && len(host) > MaxNameLen-2 {
		return fail("is too long: no subdomain of it fits in 253 characters", "")
	}
	e.Host = host
	return e, nil
}

// MustParse is [Parse] for entries known to be valid, such as built-in mandatory hosts.
func MustParse(s string) Entry {
	e, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return e
}

// String returns the canonical form: "*.example.com:22".
func (e Entry) String() string {
	s := e.Host
	if e.Wildcard {
		s = "*." + s
	}
	if e.Port != 0 {
		s += ":" + strconv.Itoa(e.Port)
	}
	return s
}

// MatchesName reports whether name is covered by the entry, on any port. name is normalised
// with [NormalizeName] first, as [List.Ports] does; an invalid name never matches.
func (e Entry) MatchesName(name string) bool {
	name, ok := NormalizeName(name)
	if !ok {
		return false
	}
	if e.Wildcard {
		return len(name) > len(e.Host)+1 && strings.HasSuffix(name, e.Host) && name[len(name)-len(e.Host)-1] == '.'
	}
	return name == e.Host
}

// NormalizeName returns the canonical form of a name seen on the wire (a DNS question, a TLS
// server name, an HTTP Host), or ok=false if it is not a valid host name. Such names never match.
func NormalizeName(name string) (canonical string, ok bool) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > MaxNameLen {
		return "", false
	}
	for i := 0; i < len(name); i++ {
		if name[i] > 0x7e || name[i] <= ' ' {
			return "", false
		}
	}
	name = strings.ToLower(name)
	if checkName(name) != "" || isIPLiteral(name) {
		return "", false
	}
	return name, true
}

// checkName returns why name is not a valid lower-case host name, or "".
func checkName(name string) string {
	if name == "" {
		return "has no host name"
	}
	if len(name) > MaxNameLen {
		return "is longer than 253 characters"
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return "has an empty label"
		}
		if len(l) > 63 {
			return "has a label longer than 63 characters"
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "has a label that starts or ends with a hyphen"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Sprintf("is not a host name: %q is not allowed", string(rune(c)))
			}
		}
	}
	// inet_aton and URL parsers (WHATWG "ends in a number") read a name whose last label is a
	// decimal or 0x-hexadecimal number as an IPv4 address: 127.1, 0x7f.0x1, 0x7f000001.
	if last := labels[len(labels)-1]; allDigits(last) || isHexNumber(last) {
		return "ends in a numeric label, which is not a host name"
	}
	return ""
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isHexNumber reports whether s is "0x" followed by zero or more hexadecimal digits, which an
// IPv4 parser reads as a number. s is lower-case.
func isHexNumber(s string) bool {
	rest, ok := strings.CutPrefix(s, "0x")
	if !ok {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !(rest[i] >= '0' && rest[i] <= '9' || rest[i] >= 'a' && rest[i] <= 'f') {
			return false
		}
	}
	return true
}

// splitPort splits "host:port". A missing port is 0.
func splitPort(s string) (string, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, 0, nil
	}
	host, ps := s[:i], s[i+1:]
	if strings.Contains(host, ":") {
		return "", 0, fmt.Errorf("has more than one colon")
	}
	if ps == "" || len(ps) > 5 || !allDigits(ps) {
		return "", 0, fmt.Errorf("has an invalid port %q", ps)
	}
	if len(ps) > 1 && ps[0] == '0' {
		return "", 0, fmt.Errorf("has a port with a leading zero %q", ps)
	}
	p, _ := strconv.Atoi(ps)
	if p < 1 || p > 65535 {
		return "", 0, fmt.Errorf("has port %d outside 1–65535", p)
	}
	return host, p, nil
}

func isIPLiteral(s string) bool {
	t := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if _, err := netip.ParseAddr(t); err == nil {
		return true
	}
	if strings.HasPrefix(s, "[") {
		return true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.IsValid() {
		return true
	}
	return false
}

// hostOfURL returns the host[:port] part of a URL, unvalidated. It contains no "/", so Parse
// does not recurse through it twice.
func hostOfURL(s string) string {
	_, rest, _ := strings.Cut(s, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	return rest
}
