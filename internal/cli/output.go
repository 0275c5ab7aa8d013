package cli

// Output rules, for every command:
//
//   - results go to stdout; progress, warnings and errors go to stderr;
//   - glyphs and colour only on a terminal, and never when NO_COLOR is set;
//   - --json output is stable, indented, and never mixed with prose;
//   - an error is one "error: …" line, then "  ↳ …" naming the command or change that fixes it;
//   - a warning is "warning: …", with the same hint line;
//   - messages are lower-case and end without a period; no stack trace ever reaches the user.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// warnf prints a warning and an optional hint to the error stream.
func (a *App) warnf(hint, format string, args ...any) {
	fmt.Fprintf(a.Err, "warning: "+format+"\n", args...)
	if hint != "" {
		fmt.Fprintf(a.Err, "  ↳ %s\n", hint)
	}
}

// progressf prints one line of progress to the error stream.
func (a *App) progressf(format string, args ...any) {
	fmt.Fprintf(a.Err, format+"\n", args...)
}

// writeJSON prints v as indented JSON on stdout.
func (a *App) writeJSON(v any) error {
	enc := json.NewEncoder(a.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes aligned columns to w. The first row is the header.
func table(w io.Writer, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
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
