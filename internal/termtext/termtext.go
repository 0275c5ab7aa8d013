package termtext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s with every character that is not printable, newline and tab included, written
// as its Go escape: "\x1b[2A" becomes `\x1b[2A`, "a\nb" becomes `a\nb`.
func Line(s string) string { return escape(s, false) }

// Text returns s with every character that is not printable written as its Go escape, except
// that newlines and tabs stay as they are: for text of several lines.
func Text(s string) string { return escape(s, true) }

const hexDigits = "0123456789abcdef"

func escape(s string, multiline bool) string {
	if clean(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xf])
		case keep(r, multiline):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// clean reports whether s has nothing to escape, the common case, so it is returned as is.
func clean(s string, multiline bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !keep(r, multiline) {
			return false
		}
		i += n
	}
	return true
}

func keep(r rune, multiline bool) bool {
	if multiline && (r == '\n' || r == '\t') {
		return true
	}
	return unicode.IsPrint(r)
}
