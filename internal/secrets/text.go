package secrets

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/termtext"
)

// The text the secrets commands print. Names come from files the agent may write (manifests,
// registries), so every cell and every field goes through termtext.

// WriteText prints what set did on out, and on errOut the step that hands the value on.
func (r *SetResult) WriteText(out, errOut io.Writer) {
	fmt.Fprintf(out, "%s %s in the %s store\n", r.Status, r.Name, r.Store)
	if r.Next {
		fmt.Fprintln(errOut, "next: `abox gateway up` (or `abox up`) hands the new value to the gateway")
	}
}

// WriteText prints one line per removed secret.
func (r *RemoveReport) WriteText(out io.Writer) {
	for _, x := range r.Removed {
		if x.Was {
			fmt.Fprintf(out, "removed %s from the %s store\n", x.Name, r.Store)
		} else {
			fmt.Fprintf(out, "%s was not in the %s store; its record is gone\n", x.Name, r.Store)
		}
	}
}

// WriteText prints the rows as a table on out and the store used on errOut, with the step that
// hands new values on.
func (r *RowsReport) WriteText(out, errOut io.Writer) {
	if r.Empty != "" {
		fmt.Fprintln(out, r.Empty)
		return
	}
	rows := [][]string{{"secret", "status", "source", "detail"}}
	for _, x := range r.Rows {
		rows = append(rows, []string{x.Secret, x.Status, orDash(x.Source), orDash(termtext.Line(x.Detail))})
	}
	table(out, rows)
	fmt.Fprintf(errOut, "store: %s (%s)\n", r.Store, r.Why)
	if r.Next {
		fmt.Fprintln(errOut, "next: `abox gateway up` (or `abox up`) hands the new values to the gateway")
	}
}

// WriteText prints the index as a table on out, one line per use; wide adds each secret's
// reference and last sync. The store used goes to errOut.
func (r *ListReport) WriteText(out, errOut io.Writer, wide bool) {
	head := []string{"secret", "store", "source"}
	if wide {
		head = append(head, "reference", "last sync")
	}
	rows := [][]string{append(head, "used by")}
	for _, e := range r.Secrets {
		row := []string{e.Name, yesNo(e.Stored), orDash(e.Source)}
		if wide {
			row = append(row, orDash(e.Reference), syncedText(e.SyncedAt))
		}
		if len(e.UsedBy) == 0 {
			rows = append(rows, append(row, "— nothing uses it"))
			continue
		}
		for i, u := range e.UsedBy {
			if i > 0 {
				row = make([]string, len(row))
			}
			rows = append(rows, append(row, useText(u)))
		}
	}
	if len(r.Secrets) == 0 {
		fmt.Fprintln(out, "no secrets")
	} else {
		table(out, rows)
	}
	for _, s := range r.Stale {
		fmt.Fprintf(out, "stale: %s: %s; its uses above come from its registry entry and approved manifest\n", staleName(s), s.Reason)
	}
	fmt.Fprintf(errOut, "store: %s (%s)\n", r.Store["kind"], r.Store["why"])
}

// WriteText prints a line per variable.
func (r *AttachReport) WriteText(out io.Writer) {
	for _, l := range r.Lines {
		fmt.Fprintln(out, l)
	}
}

// attachedLine is the line `abox secrets attach` prints for a pair: whether the store holds its
// secret yet, from stored (nil when the store could not be asked).
func attachedLine(p manifest.EnvSecret, stored []string) string {
	state := "in the store"
	switch {
	case stored == nil:
		state = "the store was not checked"
	case !slices.Contains(stored, p.Secret):
		state = "not in the store yet: `abox secrets set " + p.Secret + "`"
	}
	return fmt.Sprintf("attached %s ← %s (%s)", p.Env, p.Secret, state)
}

// Exposure is the warning every run and attach print while secrets are attached to the agent
// (variable → secret), with its hint; allowed is the project's number of allowed domains, or
// negative when unknown. Empty when none is attached.
func Exposure(attached map[string]string, allowed int) (warning, hint string) {
	if len(attached) == 0 {
		return "", ""
	}
	var list []string
	for _, env := range slices.Sorted(maps.Keys(attached)) {
		list = append(list, env+"←"+attached[env])
	}
	domains := "any allowed domain"
	if allowed >= 0 {
		domains = fmt.Sprintf("any of the %d allowed domains", allowed)
	}
	n := fmt.Sprintf("%d secrets", len(list))
	if len(list) == 1 {
		n = "1 secret"
	}
	return "the agent holds secrets in its environment: " + n + ": " + strings.Join(list, ", "),
		"the agent can read, print and send them to " + domains + " — keep the egress list tight (`abox egress list`), " +
			"and expect them in `docker inspect` of the agent container; `abox secrets detach ENV` takes one back"
}

// useText is "alpha → env DATABASE_URL", marked when read from a stale project.
func useText(u Use) string {
	s := u.Project + " → " + u.String()
	if u.Stale {
		s += " (stale project)"
	}
	return s
}

func staleName(s StaleProject) string {
	if s.Project == "" {
		return "profile " + s.Profile
	}
	return fmt.Sprintf("project %s (profile %s, %s)", s.Project, s.Profile, s.Workspace)
}

// table writes aligned columns to w, the first row the header, every cell escaped by
// termtext.Line: a tab or a newline in a name would move the columns or forge a row.
func table(w io.Writer, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = termtext.Line(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func syncedText(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
