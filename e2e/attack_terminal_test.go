//go:build e2e

package e2e

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/aboxhq/abox/e2e/harness"
)

// TestAttackTerminalEscapes: with abox on a terminal, the agent prints escape sequences into
// everything abox shows a person — its assistant text, a tool name, a stdout line that is not
// stream-json, a TLS server name, and its last stderr line, the one that once erased the run
// summary's "denied DNS names" line with "\r\e[2A\e[J" and printed its own "(none)". Each
// reaches the terminal in its visible form and none raw; so do `abox logs --transcript` and
// `abox egress list` afterwards.
func TestAttackTerminalEscapes(t *testing.T) {
	h := harness.Setup(t)
	srv := h.StartServer("srv.test")
	upProject(t, h, "tty", nil, "")
	res := h.AboxOnTerminal("run", bashLines(
		`printf 'said: \r\033[2A\033[J(none) \033]0;pwned\007 \302\233 2J \342\200\256 rtl\n'`,
		`printf '::tool_use name=tool\033[31mred\n'`,
		`printf 'plain: \033[2A\033[J(none)\n' > /proc/$PPID/fd/1`, // past the stand-in: not JSON
		`claude net tls `+srv.IP+`:443 $'sni\e[2A\e[J.test' || true`,
		`printf 'last: \r\033[2A\033[J  denied DNS names: (none)\n' >&2`,
	))
	if !res.OK() {
		t.Fatalf("abox run on a terminal: %s", res)
	}
	term := res.Stdout
	// the terminal path: the pretty view, not the raw stream
	if !strings.Contains(term, "\nresult: success\n") || strings.Contains(term, `"type":`) {
		t.Errorf("abox run on a terminal did not show its pretty view:\n%q", term)
	}
	wantVisible(t, "abox run", term,
		`said: \r\x1b[2A\x1b[J(none) \x1b]0;pwned\a \u009b 2J \u202e rtl`,
		`→ tool\x1b[31mred`,
		`plain: \x1b[2A\x1b[J(none)`,
		`refused connections (SNI/Host): sni\x1b[2a\x1b[j.test (x1)`, // netd lower-cases names
		`note: agent stderr: last: \r\x1b[2A\x1b[J  denied DNS names: (none)`)

	m := regexp.MustCompile(`\nrun ([0-9a-f]{8}) · `).FindStringSubmatch(term)
	if m == nil {
		t.Fatalf("no run id in the summary:\n%q", term)
	}
	logs := h.AboxOnTerminal("logs", "--transcript", m[1])
	if !logs.OK() {
		t.Fatalf("abox logs --transcript: %s", logs)
	}
	wantVisible(t, "abox logs --transcript", logs.Stdout,
		`said: \r\x1b[2A\x1b[J(none) \x1b]0;pwned\a \u009b 2J \u202e rtl`, `→ tool\x1b[31mred`)
	list := h.AboxOnTerminal("egress", "list")
	if !list.OK() {
		t.Fatalf("abox egress list: %s", list)
	}
	wantVisible(t, "abox egress list", list.Stdout, `sni\x1b[2a\x1b[j.test`)
}

// wantVisible fails t unless out holds each visible form and no character a terminal would act
// on: a C0 control but newline, DEL, a C1 control, a format character such as U+202E, or a byte
// that is not UTF-8.
//
// abox's own queries at start are left out: bubbletea's init, a dependency of the `abox init`
// picker, asks the terminal for its background colour and cursor position.
func wantVisible(t *testing.T, what, out string, visible ...string) {
	t.Helper()
	out = strings.Replace(out, "\x1b]11;?\x1b\\\x1b[6n", "", 1)
	for i, r := range out {
		bad := r == utf8.RuneError && !strings.HasPrefix(out[i:], "\ufffd") ||
			r < 0x20 && r != '\n' || r >= 0x7f && r < 0xa0 || unicode.Is(unicode.Cf, r)
		if bad {
			t.Errorf("%s printed the raw %q at byte %d:\n%q", what, r, i, out)
			break
		}
	}
	for _, v := range visible {
		if !strings.Contains(out, v) {
			t.Errorf("%s lacks the visible form %s:\n%s", what, v, out)
		}
	}
}
