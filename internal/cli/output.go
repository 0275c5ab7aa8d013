package cli

// Output rules, for every command:
//
//   - results go to stdout; progress, warnings and errors go to stderr;
//   - glyphs and colour only on a terminal, and never when NO_COLOR is set;
//   - --json output is stable, indented, never mixed with prose, and exact: values are what was
//     recorded, with the characters a terminal acts on written as JSON escapes (termtext.JSON);
//   - text the agent may have influenced (its output, names it looked up, workspace file names,
//     tool names, anything quoted in an error) never reaches a person raw: it goes through
//     termtext.Line (a field, or a whole one-line record with linef) or termtext.Text (free text
//     of several lines). warnf, progressf, table and the error report do that themselves;
//   - an error is one "error: …" line, then "  ↳ …" naming the command or change that fixes it;
//   - a warning is "warning: …", with the same hint line;
//   - messages are lower-case and end without a period; no stack trace ever reaches the user.

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aboxhq/abox/internal/termtext"
)

// warnf prints a warning and an optional hint to the error stream, escaped.
func (a *App) warnf(hint, format string, args ...any) {
	fmt.Fprintln(a.Err, termtext.Text("warning: "+fmt.Sprintf(format, args...)))
	if hint != "" {
		fmt.Fprintln(a.Err, "  ↳ "+termtext.Text(hint))
	}
}

// progressf prints one line of progress to the error stream, escaped.
func (a *App) progressf(format string, args ...any) {
	fmt.Fprintln(a.Err, termtext.Text(fmt.Sprintf(format, args...)))
}

// linef and table are termtext's: every line, every cell escaped (the agent may have chosen
// any field).
var (
	linef = termtext.Linef
	table = termtext.Table
)

// writeJSON prints v as indented JSON on stdout. encoding/json escapes C0 controls and
// U+2028/U+2029 in strings whatever SetEscapeHTML says; termtext.JSON escapes what it leaves
// raw (DEL, C1, bidi and other format characters), so the output stays exact and valid.
func (a *App) writeJSON(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := a.Out.Write(termtext.JSON(b.Bytes()))
	return err
}

// paint wraps s in an ANSI colour when colour is on.
func (a *App) paint(color, s string) string {
	if !a.Color {
		return s
	}
	codes := map[string]string{"red": "31", "green": "32", "yellow": "33", "dim": "2", "bold": "1"}
	return "\x1b[" + codes[color] + "m" + s + "\x1b[0m"
}

// plural returns "1 thing" or "N things".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
