package netd

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// A ClientHello is read and checked here, never terminated: netd decides on the server name the
// client asked for and then replays the bytes to the server it connects to itself. The parser is
// at least as strict as a real TLS stack (it refuses every hello crypto/tls refuses, which
// FuzzParseClientHello checks), so a name is never taken from bytes a server would not read the
// same way.

// maxHelloBytes bounds the records netd buffers before it decides.
const maxHelloBytes = 16 << 10

const (
	recordHeaderLen     = 5
	recordTypeHandshake = 22
	handshakeClientHelo = 1
	maxRecordPayload    = 16 << 10
)

// Errors of [readClientHello] and [parseClientHello]; their text is the logged reason.
var (
	errNotHandshake = errors.New("not a tls handshake")
	errHelloTooBig  = errors.New("client hello larger than 16 KiB")
	errMalformed    = errors.New("malformed client hello")
)

// readClientHello reads TLS records from r until they hold one whole ClientHello handshake
// message, which must end with its record. It returns every byte it read (to replay upstream)
// and the message itself, header included. It never reads past the record that completes the
// message.
func readClientHello(r io.Reader) (raw, msg []byte, err error) {
	var hs []byte
	for {
		if len(raw)+recordHeaderLen > maxHelloBytes {
			return raw, nil, errHelloTooBig
		}
		hdr, err := readN(r, &raw, recordHeaderLen)
		if err != nil {
			return raw, nil, err
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if hdr[0] != recordTypeHandshake || hdr[1] != 3 {
			return raw, nil, errNotHandshake
		}
		if n == 0 || n > maxRecordPayload {
			return raw, nil, errMalformed
		}
		if len(raw)+n > maxHelloBytes {
			return raw, nil, errHelloTooBig
		}
		body, err := readN(r, &raw, n)
		if err != nil {
			return raw, nil, err
		}
		hs = append(hs, body...)
		if len(hs) < 4 {
			continue
		}
		if hs[0] != handshakeClientHelo {
			return raw, nil, errNotHandshake
		}
		if want := 4 + (int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3])); len(hs) >= want {
			if len(hs) > want {
				// More in the hello's last record: a second message, which a server must refuse
				// (RFC 8446 §5.1) and netd would pass on unread, a second ClientHello among them.
				return raw, nil, errMalformed
			}
			return raw, hs[:want], nil
		}
	}
}

// readN reads exactly n bytes from r, appends them to *raw and returns them.
func readN(r io.Reader, raw *[]byte, n int) ([]byte, error) {
	start := len(*raw)
	*raw = append(*raw, make([]byte, n)...)
	if _, err := io.ReadFull(r, (*raw)[start:]); err != nil {
		*raw = (*raw)[:start]
		if err == io.EOF && start == 0 {
			return nil, errors.New("no client hello")
		}
		return nil, fmt.Errorf("reading client hello: %w", err)
	}
	return (*raw)[start:], nil
}

// TLS extension numbers the parser checks (RFC 6066, 8446, 7301).
const (
	extServerName      = 0
	extStatusRequest   = 5
	extSupportedGroups = 10
	extPointFormats    = 11
	extSignatureAlgs   = 13
	extALPN            = 16
	extSCT             = 18
	extEMS             = 23
	extSessionTicket   = 35
	extPreSharedKey    = 41
	extEarlyData       = 42
	extSupportedVers   = 43
	extCookie          = 44
	extPSKModes        = 45
	extSignatureCert   = 50
	extKeyShare        = 51
	extQUICParams      = 57
	extECH             = 0xfe0d
	extRenegotiation   = 0xff01
)

// echExtensions are the extension numbers that mark a hello as part of an encrypted ClientHello
// (ECH, and ESNI before it), with their origin: the RFC's, and those of the drafts that
// implementations deployed. A server that routes on an encrypted hello serves the name inside
// it, which netd cannot read, so a hello carrying any of them is refused, whatever its body
// (GREASE ECH, RFC 9849 §6.2, is the same extension with random contents, made to be
// indistinguishable). The package doc lists them.
var echExtensions = map[uint16]string{
	extECH: "encrypted_client_hello (RFC 9849, IANA; drafts 13-25)",
	0xfd00: "ech_outer_extensions (RFC 9849, IANA; outer_extensions in draft 08)",
	0xfe0c: "encrypted_client_hello (draft 12)",
	0xfe0b: "encrypted_client_hello (draft 11)",
	0xfe0a: "encrypted_client_hello (draft 10)",
	0xfe09: "encrypted_client_hello (draft 09)",
	0xfe08: "encrypted_client_hello (draft 08)",
	0xda09: "ech_is_inner (drafts 09-10)",
	0xff02: "encrypted_client_hello (draft 07)",
	0xff03: "ech_nonce (draft 07)",
	0xff04: "outer_extension (draft 07)",
	0xffce: "encrypted_server_name (ESNI, drafts 00-05; echo_nonce in draft 06)",
}

// clientHello is what netd reads of a ClientHello.
type clientHello struct {
	serverName string // the host_name of the server_name extension; "" without one
	// ech is the first of the hello's extensions that belongs to an encrypted ClientHello
	// ([echExtensions]); 0 when it has none.
	ech uint16
}

// parseClientHello reads a ClientHello handshake message (header included): the host_name of its
// server_name extension and whether it carries an encrypted ClientHello. Any structural error is
// [errMalformed].
func parseClientHello(msg []byte) (clientHello, error) {
	b := wire(msg)
	typ, _ := b.u8()
	n, ok := b.u24()
	if typ != handshakeClientHelo || !ok || int(n) != len(b) {
		return clientHello{}, errMalformed
	}
	var sessionID, suites, compression wire
	if _, ok := b.take(2 + 32); !ok || // legacy_version, random
		!b.vec8(&sessionID) || len(sessionID) > 32 ||
		!b.vec16(&suites) || len(suites) == 0 || len(suites)%2 != 0 ||
		!b.vec8(&compression) || len(compression) == 0 {
		return clientHello{}, errMalformed
	}
	if len(b) == 0 {
		return clientHello{}, nil // no extensions at all
	}
	var exts wire
	if !b.vec16(&exts) || len(b) != 0 {
		return clientHello{}, errMalformed
	}
	return parseExtensions(exts)
}

// parseExtensions checks every extension and returns what netd reads of them.
func parseExtensions(exts wire) (clientHello, error) {
	seen := map[uint16]bool{}
	var h clientHello
	for len(exts) > 0 {
		typ, ok := exts.u16()
		var data wire
		if !ok || !exts.vec16(&data) || seen[typ] {
			return clientHello{}, errMalformed
		}
		seen[typ] = true
		if typ == extPreSharedKey && len(exts) != 0 {
			return clientHello{}, errMalformed // RFC 8446 §4.2.11: it must be the last extension
		}
		if _, ok := echExtensions[typ]; ok && h.ech == 0 {
			h.ech = typ
		}
		if typ == extServerName {
			var err error
			if h.serverName, err = parseServerName(data); err != nil {
				return clientHello{}, err
			}
			continue
		}
		if check, known := extensionChecks[typ]; known && !check(data) {
			return clientHello{}, errMalformed
		}
	}
	return h, nil
}

// parseServerName reads a server_name extension (RFC 6066 §3): a non-empty list of typed,
// non-empty names with at most one host_name, which may not end in a dot.
func parseServerName(data wire) (string, error) {
	var list wire
	if !data.vec16(&list) || len(list) == 0 || len(data) != 0 {
		return "", errMalformed
	}
	host := ""
	for len(list) > 0 {
		typ, ok := list.u8()
		var name wire
		if !ok || !list.vec16(&name) || len(name) == 0 {
			return "", errMalformed
		}
		if typ != 0 {
			continue
		}
		if host != "" || strings.HasSuffix(string(name), ".") {
			return "", errMalformed
		}
		host = string(name)
	}
	return host, nil
}

// extensionChecks validates the body of the extensions whose syntax a TLS server checks; each
// function must consume the body exactly. Unknown extensions are not checked.
var extensionChecks = map[uint16]func(wire) bool{
	extStatusRequest: func(b wire) bool {
		var x wire
		_, ok := b.u8()
		return ok && b.vec16(&x) && b.vec16(&x) && len(b) == 0
	},
	extSupportedGroups: listOf16(true),
	extSignatureAlgs:   listOf16(true),
	extSignatureCert:   listOf16(true),
	extPointFormats:    func(b wire) bool { var x wire; return b.vec8(&x) && len(x) > 0 && len(b) == 0 },
	extRenegotiation:   func(b wire) bool { var x wire; return b.vec8(&x) && len(b) == 0 },
	extPSKModes:        func(b wire) bool { var x wire; return b.vec8(&x) && len(b) == 0 },
	extCookie:          func(b wire) bool { var x wire; return b.vec16(&x) && len(x) > 0 && len(b) == 0 },
	extEMS:             isEmpty,
	extSCT:             isEmpty,
	extEarlyData:       isEmpty,
	extSessionTicket:   func(wire) bool { return true },
	extQUICParams:      func(wire) bool { return true },
	extALPN:            checkALPN,
	extSupportedVers:   checkSupportedVersions,
	extKeyShare:        checkKeyShare,
	extPreSharedKey:    checkPreSharedKey,
}

func isEmpty(b wire) bool { return len(b) == 0 }

// listOf16 checks a u16-length-prefixed list of u16 values.
func listOf16(nonEmpty bool) func(wire) bool {
	return func(b wire) bool {
		var l wire
		return b.vec16(&l) && len(b) == 0 && len(l)%2 == 0 && (!nonEmpty || len(l) > 0)
	}
}

func checkALPN(b wire) bool {
	var list wire
	if !b.vec16(&list) || len(list) == 0 || len(b) != 0 {
		return false
	}
	for len(list) > 0 {
		var proto wire
		if !list.vec8(&proto) || len(proto) == 0 {
			return false
		}
	}
	return true
}

func checkSupportedVersions(b wire) bool {
	var l wire
	return b.vec8(&l) && len(l) > 0 && len(l)%2 == 0 && len(b) == 0
}

func checkKeyShare(b wire) bool {
	var shares wire
	if !b.vec16(&shares) || len(b) != 0 {
		return false
	}
	for len(shares) > 0 {
		var key wire
		if _, ok := shares.u16(); !ok || !shares.vec16(&key) || len(key) == 0 {
			return false
		}
	}
	return true
}

func checkPreSharedKey(b wire) bool {
	var ids, binders wire
	if !b.vec16(&ids) || len(ids) == 0 || !b.vec16(&binders) || len(binders) == 0 || len(b) != 0 {
		return false
	}
	for len(ids) > 0 {
		var label wire
		if !ids.vec16(&label) || len(label) == 0 {
			return false
		}
		if _, ok := ids.take(4); !ok { // obfuscated_ticket_age
			return false
		}
	}
	for len(binders) > 0 {
		var binder wire
		if !binders.vec8(&binder) || len(binder) == 0 {
			return false
		}
	}
	return true
}

// wire is a cursor over wire data; each method consumes from the front and reports false,
// consuming nothing useful, when the data is too short.
type wire []byte

func (b *wire) take(n int) ([]byte, bool) {
	if n < 0 || len(*b) < n {
		*b = nil
		return nil, false
	}
	v := (*b)[:n]
	*b = (*b)[n:]
	return v, true
}

func (b *wire) u8() (uint8, bool) {
	v, ok := b.take(1)
	if !ok {
		return 0, false
	}
	return v[0], true
}

func (b *wire) u16() (uint16, bool) {
	v, ok := b.take(2)
	if !ok {
		return 0, false
	}
	return uint16(v[0])<<8 | uint16(v[1]), true
}

func (b *wire) u24() (uint32, bool) {
	v, ok := b.take(3)
	if !ok {
		return 0, false
	}
	return uint32(v[0])<<16 | uint32(v[1])<<8 | uint32(v[2]), true
}

// vec8 reads a vector with a one-byte length into *out.
func (b *wire) vec8(out *wire) bool {
	n, ok := b.u8()
	if !ok {
		return false
	}
	v, ok := b.take(int(n))
	*out = v
	return ok
}

// vec16 reads a vector with a two-byte length into *out.
func (b *wire) vec16(out *wire) bool {
	n, ok := b.u16()
	if !ok {
		return false
	}
	v, ok := b.take(int(n))
	*out = v
	return ok
}
