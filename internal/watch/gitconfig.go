package watch

import (
	"bytes"
	"fmt"
	"strings"
)

// Entry is one variable of a git config file, as git itself reads it.
type Entry struct {
	// Key is the full, dotted name as `git config --list` prints it: the section lower-cased,
	// the subsection as written in [section "Sub"] (lower-cased in the deprecated
	// [section.sub] form), the variable name lower-cased.
	Key     string
	Value   string
	NoValue bool // a bare "name" line: the boolean true
	Line    int
}

// Section is the part of the key before its first dot.
func (e Entry) Section() string {
	s, _, _ := strings.Cut(e.Key, ".")
	return s
}

// Name is the part of the key after its last dot.
func (e Entry) Name() string { return e.Key[strings.LastIndexByte(e.Key, '.')+1:] }

// Subsection is the part of the key between its first and last dots, or "".
func (e Entry) Subsection() string {
	first, last := strings.IndexByte(e.Key, '.'), strings.LastIndexByte(e.Key, '.')
	if first < 0 || first == last {
		return ""
	}
	return e.Key[first+1 : last]
}

// ParseConfig reads a git config file the way git's config.c does, character by character, so
// that no spelling can hide a key from abox while git still honours it:
//
//   - section names and variable names are case-insensitive; [Core] and HooksPath are
//     core.hookspath;
//   - [section "sub"] keeps the subsection's case and backslash escapes; the deprecated
//     [section.sub] form lower-cases it;
//   - leading blanks are ignored, so a more deeply indented line is a new variable, never the
//     continuation of the previous value;
//   - a key may follow its section header on the same line: "[core] hooksPath = x";
//   - values may be quoted, hold \t \n \b \\ \" escapes, and continue on the next line after a
//     trailing backslash; # and ; start a comment outside quotes;
//   - CRLF line ends and a leading UTF-8 byte-order mark are accepted.
//
// git refuses to run at all with a syntax error in its config, so an error here means git is
// unusable rather than tricked; ParseConfig then returns the entries read before the error and
// the error, which names the line.
func ParseConfig(data []byte) ([]Entry, error) {
	p := &cfgParser{r: cfgReader{data: bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), line: 1}}
	return p.entries, p.parse()
}

type cfgParser struct {
	r       cfgReader
	entries []Entry
	base    string // "section." or "section.sub." of the current header; "" before any header
}

func (p *cfgParser) parse() error {
	comment := false
	for {
		c := p.r.next()
		switch {
		case c == '\n':
			if p.r.eof {
				return nil
			}
			comment = false
		case comment, isSpace(c):
		case c == '#' || c == ';':
			comment = true
		case c == '[':
			line := p.r.line
			base, err := p.r.header()
			if err != nil || base == "" {
				return fmt.Errorf("line %d: bad section header", line)
			}
			p.base = base + "."
		case isAlpha(c):
			if err := p.variable(c); err != nil {
				return err
			}
		default:
			return fmt.Errorf("line %d: bad config line", p.r.line)
		}
	}
}

// variable reads a name (whose first character is c) and its optional value.
func (p *cfgParser) variable(c byte) error {
	line := p.r.line
	name := []byte{lower(c)}
	for {
		c = p.r.next()
		if p.r.eof || !isKeyChar(c) {
			break
		}
		name = append(name, lower(c))
	}
	for c == ' ' || c == '\t' {
		c = p.r.next()
	}
	key := p.base + string(name)
	if i := strings.IndexByte(key, 0); i >= 0 {
		key = key[:i] // a NUL in a subsection: git's keys are C strings too, and it sees only this much
	}
	e := Entry{Key: key, Line: line, NoValue: true}
	if c != '\n' {
		if c != '=' {
			return fmt.Errorf("line %d: bad config line", line)
		}
		v, err := p.r.value()
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		e.Value, e.NoValue = v, false
	}
	p.entries = append(p.entries, e)
	return nil
}

// cfgReader hands out characters as git's get_next_char does: CRLF becomes LF, and the end of
// the data reads as a final LF with eof set.
type cfgReader struct {
	data []byte
	pos  int
	line int
	eof  bool
}

func (r *cfgReader) next() byte {
	if r.pos >= len(r.data) {
		r.eof = true
		return '\n'
	}
	c := r.data[r.pos]
	r.pos++
	if c == '\r' && r.pos < len(r.data) && r.data[r.pos] == '\n' {
		c = '\n'
		r.pos++
	}
	if c == '\n' {
		r.line++
	}
	return c
}

// header reads a section header after its "[" and returns "section" or "section.sub".
func (r *cfgReader) header() (string, error) {
	var name []byte
	for {
		c := r.next()
		switch {
		case r.eof:
			return "", errBadHeader
		case c == ']':
			return string(name), nil
		case isSpace(c):
			return r.extendedHeader(name, c)
		case !isKeyChar(c) && c != '.':
			return "", errBadHeader
		}
		name = append(name, lower(c))
	}
}

var errBadHeader = fmt.Errorf("bad section header")

// extendedHeader reads the ` "subsection"]` part of a header; c is the blank that started it.
func (r *cfgReader) extendedHeader(name []byte, c byte) (string, error) {
	for isSpace(c) {
		if c == '\n' {
			return "", errBadHeader
		}
		c = r.next()
	}
	if c != '"' {
		return "", errBadHeader
	}
	name = append(name, '.')
	for {
		c = r.next()
		if c == '\n' {
			return "", errBadHeader
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = r.next(); c == '\n' {
				return "", errBadHeader
			}
		}
		name = append(name, c)
	}
	if r.next() != ']' {
		return "", errBadHeader
	}
	return string(name), nil
}

// value reads a value after its "=", up to and including the end of its (last) line.
func (r *cfgReader) value() (string, error) {
	var v []byte
	quote, comment := false, false
	trim := -1 // length to cut trailing blanks back to, or -1
	for {
		c := r.next()
		if c == '\n' {
			if quote {
				return "", fmt.Errorf("unterminated quote")
			}
			if trim >= 0 {
				v = v[:trim]
			}
			if i := bytes.IndexByte(v, 0); i >= 0 {
				v = v[:i] // git's values are C strings: what follows a NUL is not seen
			}
			return string(v), nil
		}
		switch {
		case comment:
		case isSpace(c) && !quote:
			if trim < 0 {
				trim = len(v)
			}
			if len(v) > 0 {
				v = append(v, ' ') // git writes every unquoted blank inside a value as a space
			}
		case !quote && (c == ';' || c == '#'):
			comment = true
		default:
			trim = -1
			if c == '"' {
				quote = !quote
				continue
			}
			if c == '\\' {
				esc, ok := r.escape()
				if !ok {
					return "", fmt.Errorf("bad escape in value")
				}
				if esc < 0 {
					continue // a backslash-newline continues the value
				}
				c = byte(esc)
			}
			v = append(v, c)
		}
	}
}

// escape reads the character after a backslash in a value: -1 for a line continuation.
func (r *cfgReader) escape() (int, bool) {
	switch c := r.next(); c {
	case '\n': // also at the end of the file, as git accepts it
		return -1, true
	case 't':
		return '\t', true
	case 'b':
		return '\b', true
	case 'n':
		return '\n', true
	case '\\', '"':
		return int(c), true
	default:
		return 0, false
	}
}

// git's own ctype: blanks are space, tab, CR and LF; letters and digits are ASCII only.
func isSpace(c byte) bool   { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isAlpha(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isKeyChar(c byte) bool { return isAlpha(c) || '0' <= c && c <= '9' || c == '-' }
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
