// Package termtext makes text that abox did not write safe to print on a person's terminal.
//
// Much of what abox prints comes from the agent, which is hostile: the lines it prints, the
// text and tool names of its stream-json, the DNS and TLS server names it asks for, the names
// and contents of workspace files, the tool names and results MCP servers send back. A terminal
// obeys the control characters in such text: "\r\x1b[2A\x1b[J" moves the cursor up and erases,
// so an agent that prints it followed by "(none)" in its last stderr line replaces the run
// summary's real "denied DNS names" line with its own; an OSC sequence retitles the window, a
// right-to-left override (U+202E) shows "gpj.exe" as "exe.jpg". So every byte of such text goes
// through this package on its way to a person, and comes out visible.
//
// # The rule
//
// A character is shown as it is when [unicode.IsPrint] says so: letters, marks, numbers,
// punctuation, symbols and the ASCII space. Everything else is written as its Go escape, the
// form strconv.Quote would use, without the quotes: C0 controls ("\x1b", "\a", "\r"), DEL
// ("\x7f"), C1 controls ("\u009b"), bidi and other invisible format characters ("\u202e",
// "\u2066", "\u200b", "\ufeff"), line and paragraph separators, spaces other than U+0020
// ("\u00a0"), private-use and unassigned code points. A byte that is not UTF-8 is "\xff".
//
// [Line] is for a field printed within a line: a name, an id, a note, a table cell. Newline and
// tab are escaped there too: a newline would let a DNS name forge the next line of a report, a
// tab would move a table's columns. [Text] is for free text that spans lines: assistant text,
// an error, a manifest diff. It keeps "\n" as a line break and "\t" as a tab — a tab only moves
// the cursor right, it cannot overwrite or erase what is already on the screen — and escapes
// the rest as [Line] does, "\r" included.
//
// A backslash is not escaped, so the text `\x1b` and an escaped ESC look alike. That costs
// nothing here: neither drives the terminal, and a reader who doubts can read the raw form in
// --json or the stored file. It keeps code and Windows paths in assistant text readable, and
// makes both functions idempotent: text escaped once, such as a doctor detail, can pass another
// printer unchanged.
//
// # Where
//
// At the printing edge, for a person. Stored data (transcripts, runs.jsonl, netd's logs, the
// review queue) keeps the exact bytes, and so does --json, which is for programs: [JSON] only
// rewrites encoded JSON so that the same characters appear as \u escapes, which leaves it valid
// and decoding to the same value.
package termtext
