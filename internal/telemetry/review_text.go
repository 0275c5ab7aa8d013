package telemetry

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/aboxhq/abox/internal/termtext"
)

// WriteText writes the review as `abox egress list` prints it: the allowlist, the ignored
// hosts and the queue. Every line is escaped: the ignored entries come from agentbox.yaml,
// in the workspace the agent writes, and the queue's names from the agent's own traffic (a
// TLS server name may hold any byte).
func (r *Review) WriteText(w io.Writer) {
	line := func(format string, args ...any) { fmt.Fprintln(w, termtext.Line(fmt.Sprintf(format, args...))) }
	fmt.Fprintln(w, "allowed:")
	for _, h := range r.Allowed {
		mark := ""
		if h.Mandatory {
			mark = "  (mandatory)"
		}
		line("  %s%s", h.Entry, mark)
	}
	fmt.Fprintln(w, "ignored:")
	for _, h := range r.Ignored {
		line("  %s", h)
	}
	if len(r.Ignored) == 0 {
		fmt.Fprintln(w, "  none")
	}
	fmt.Fprintln(w, "review queue (denied, newest first):")
	if len(r.Queue) == 0 {
		fmt.Fprintln(w, "  empty")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tSEEN AS\tCOUNT\tRUNS\tLAST SEEN")
	for _, q := range r.Queue {
		kind := "looked up"
		if q.Kind == DeniedConn {
			kind = "connected to"
		}
		cells := []string{"  " + q.Name, kind, fmt.Sprint(q.Count), fmt.Sprint(q.Runs), q.LastSeen}
		for i, c := range cells {
			cells[i] = termtext.Line(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w, "  ↳ allow with `abox egress add <host>`, or silence with `abox egress ignore <host>`")
}
