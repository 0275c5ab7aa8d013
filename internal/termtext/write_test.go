package termtext

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTable: columns align two spaces apart, and a cell holding a tab or a newline is escaped
// so it can neither move a column nor forge a row.
func TestTable(t *testing.T) {
	var b strings.Builder
	Table(&b, [][]string{{"NAME", "N"}, {"a\tb", "1"}, {"x\nFORGED  9", "22"}})
	want := "NAME          N\n" +
		`a\tb          1` + "\n" +
		`x\nFORGED  9  22` + "\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Table (-want +got):\n%s", diff)
	}
}

// TestLinef: the whole formatted line is escaped, the fields and the format alike.
func TestLinef(t *testing.T) {
	var b strings.Builder
	Linef(&b, "run %s: %d\x1b", "r1\n  forged", 3)
	if want := `run r1\n  forged: 3\x1b` + "\n"; b.String() != want {
		t.Errorf("Linef = %q, want %q", b.String(), want)
	}
}
