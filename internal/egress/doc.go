// Package egress defines an allowlist entry and how a host name and port are matched against a
// list of entries.
//
// It is the one definition used by manifest validation, rendering, netd's DNS resolver, its SNI
// and HTTP proxies, and doctor, so that what the user wrote, what is rendered, what netd enforces
// and what doctor audits cannot disagree. It does no I/O.
//
// # Entries
//
//   - "example.com" allows exactly that name;
//   - "*.example.com" allows every subdomain of example.com at any depth, but not example.com
//     itself;
//   - either form may carry a port, "github.com:22". Without one, an entry is allowed on the
//     list's default ports (443, plus any ports the configuration adds).
//
// Names are case-folded and a trailing dot is removed. Internationalised names are accepted in
// punycode only, so that a look-alike cannot hide in an allowlist. URLs, paths, IP literals and
// single-label names are refused with a hint, because egress is decided by name, never by address.
// A name whose last label is a number (127.1, 0x7f.0x1) is refused too: resolvers and URL parsers
// read it as an IPv4 address.
package egress
