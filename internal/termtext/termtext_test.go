package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestLineAndText(t *testing.T) {
	for _, tc := range []struct {
		name, in, line, text string
	}{
		{"plain", "api.example.com (x3)", "api.example.com (x3)", "api.example.com (x3)"},
		{"unicode letters stay", "café 東京 ✔ ↳ …", "café 東京 ✔ ↳ …", "café 東京 ✔ ↳ …"},
		{"csi erase", "\r\x1b[2A\x1b[J(none)", `\r\x1b[2A\x1b[J(none)`, `\r\x1b[2A\x1b[J(none)`},
		{"osc title", "\x1b]0;title\x07", `\x1b]0;title\a`, `\x1b]0;title\a`},
		{"bel and nul", "a\a\x00b", `a\a\x00b`, `a\a\x00b`},
		{"del", "a\x7fb", `a\x7fb`, `a\x7fb`},
		{"c1 csi", "\u009b2J", `\u009b2J`, `\u009b2J`},
		{"c1 nel", "a\u0085b", `a\u0085b`, `a\u0085b`},
		{"rtl override", "gpj\u202eexe", `gpj\u202eexe`, `gpj\u202eexe`},
		{"bidi isolates and marks", "\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`, `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"zero width and bom", "a\u200b\u200d\ufeffb", `a\u200b\u200d\ufeffb`, `a\u200b\u200d\ufeffb`},
		{"separators and odd spaces", "a\u2028b\u2029c\u00a0d", `a\u2028b\u2029c\u00a0d`, `a\u2028b\u2029c\u00a0d`},
		{"private use and beyond the plane", "\ue000\U000e0001", `\ue000\U000e0001`, `\ue000\U000e0001`},
		{"invalid utf-8", "a\xff\xfeb\xc3", `a\xff\xfeb\xc3`, `a\xff\xfeb\xc3`},
		{"replacement character itself stays", "a\ufffdb", "a\ufffdb", "a\ufffdb"},
		{"newline", "one\ntwo\n", `one\ntwo\n`, "one\ntwo\n"},
		{"forged line", "x\n  denied DNS names: (none)", `x\n  denied DNS names: (none)`, "x\n  denied DNS names: (none)"},
		{"tab", "a\tb", `a\tb`, "a\tb"},
		{"crlf", "a\r\nb", `a\r\nb`, "a\\r\nb"},
		{"vertical tab and form feed", "a\vb\fc", `a\vb\fc`, `a\vb\fc`},
		{"backslash stays", `C:\x1b\path`, `C:\x1b\path`, `C:\x1b\path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.in); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got := Text(tc.in); got != tc.text {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
			}
		})
	}
}

// FuzzLine: whatever goes in, Line's output is printable, escaping it again changes nothing,
// and Text leaves it alone; Text's output has nothing unprintable but newlines and tabs.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "a", "\x1b[2J", "\u202e", "\xff", "a\nb\tc\r", `\x1b`, "\U0010ffff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line := Line(s)
		if bad := unprintable(line, ""); bad != "" {
			t.Fatalf("Line(%q) = %q holds %q", s, line, bad)
		}
		if again := Line(line); again != line {
			t.Fatalf("Line(Line(%q)) = %q, want %q", s, again, line)
		}
		if text := Text(line); text != line {
			t.Fatalf("Text(Line(%q)) = %q, want %q", s, text, line)
		}
		text := Text(s)
		if bad := unprintable(text, "\n\t"); bad != "" {
			t.Fatalf("Text(%q) = %q holds %q", s, text, bad)
		}
		if strings.Count(text, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Text(%q) = %q changed the line breaks", s, text)
		}
	})
}

// unprintable returns the first character of s that is neither printable nor in allowed.
func unprintable(s, allowed string) string {
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd") {
			return s[i : i+1]
		}
		if !unicode.IsPrint(r) && !strings.ContainsRune(allowed, r) {
			return string(r)
		}
	}
	return ""
}

// TestJSON: encoded JSON keeps its value and validity while losing every raw character a
// terminal would act on.
func TestJSON(t *testing.T) {
	values := map[string]any{
		"csi":     "\r\x1b[2A\x1b[J(none)",
		"osc":     "\x1b]0;title\x07",
		"c1":      "\u009b2J\u0085",
		"del":     "a\x7fb",
		"bidi":    "gpj\u202eexe\u2066\u200f\u061c",
		"sep":     "\u2028\u2029\u00a0",
		"astral":  "\U000e0001 and 😀",
		"plain":   "café <b> & \\ \"q\"",
		"invalid": "a\xffb",
		"list":    []any{"\u202e", 1.5, true, nil},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(values); err != nil {
		t.Fatal(err)
	}
	got := JSON(buf.Bytes())
	if !json.Valid(got) {
		t.Fatalf("JSON(...) is not valid JSON:\n%s", got)
	}
	if bad := unprintable(string(got), "\n"); bad != "" {
		t.Errorf("JSON(...) holds %q:\n%s", bad, got)
	}
	var back, want map[string]any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("JSON(...) decodes to another value (-want +got):\n%s", diff)
	}
	if back["bidi"] != values["bidi"] || back["c1"] != values["c1"] {
		t.Errorf("JSON(...) decodes to %q, %q, want the exact originals", back["bidi"], back["c1"])
	}
	for _, want := range []string{`\u202e`, `\u009b`, `\u007f`, `\udb40\udc01`, `😀`, `<b> &`} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("JSON(...) lacks %s:\n%s", want, got)
		}
	}
	if plain := []byte(`{"a": "café"}`); !bytes.Equal(JSON(plain), plain) {
		t.Errorf("JSON(%s) = %s, want it unchanged", plain, JSON(plain))
	}
}
