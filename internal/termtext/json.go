package termtext

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON returns the encoded JSON b with every character that [Line] would escape and JSON
// leaves raw — DEL, C1 controls, bidi and other format characters, separators, bytes that are
// not UTF-8 — written as a \u escape inside its string, so that --json on a terminal cannot
// drive it either. encoding/json already escapes C0 controls (and U+2028, U+2029) in strings
// whatever SetEscapeHTML says; outside strings JSON has only ASCII, which JSON leaves alone. The
// result is valid JSON that decodes to the same value (a byte that is not UTF-8 decodes to
// U+FFFD either way).
//
// b must be valid JSON, as an encoder or [encoding/json.Compact] writes it: a raw C0 control
// inside a string, which such JSON never holds, is not rewritten.
func JSON(b []byte) []byte {
	if jsonClean(b) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = appendU(out, utf8.RuneError)
		case jsonRaw(r):
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				out = appendU(appendU(out, r1), r2)
			} else {
				out = appendU(out, r)
			}
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func jsonClean(b []byte) bool {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if (r == utf8.RuneError && n == 1) || jsonRaw(r) {
			return false
		}
		i += n
	}
	return true
}

// jsonRaw reports whether JSON would carry r raw where a terminal should not see it.
func jsonRaw(r rune) bool { return r >= 0x7f && !unicode.IsPrint(r) }

// appendU appends r, a code point of the basic plane, as \uXXXX.
func appendU(out []byte, r rune) []byte {
	return append(out, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
