package termtext

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Linef prints one line made of format and args to w, the whole line escaped by [Line]: a
// record built of fields any of which may come from the agent.
func Linef(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, Line(fmt.Sprintf(format, args...)))
}

// Table writes aligned columns to w, two spaces apart. The first row is the header. Every cell
// is escaped by [Line]: a tab or a newline in a name would move the columns or forge a row.
func Table(w io.Writer, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = Line(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
}
