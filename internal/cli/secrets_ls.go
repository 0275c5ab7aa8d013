package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/secrets"
)

type secretsLsOptions struct {
	verbose, unused, json bool
}

func newSecretsLsCmd(a *App) *cobra.Command {
	var opts secretsLsOptions
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List secrets and who uses them",
		Long: `Ls is the reverse index, the blast radius of each secret: every secret in the store, in
secrets.yaml, recorded by abox or used by a project, with every use by every project registered on
any profile — attached to an agent (env), declared by a server (server), or in a remote server's
headers (remote).

A project abox has never seen cannot appear. A registered project whose manifest has moved or no
longer loads is listed as stale, with the uses its registry entry and approved manifest still
show. --unused lists secrets nothing uses.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSecretsLs(c.Context(), a, opts) },
	}
	f := cmd.Flags()
	f.BoolVarP(&opts.verbose, "wide", "v", false, "also show each secret's reference and last sync (not --verbose, which traces docker)")
	f.BoolVar(&opts.unused, "unused", false, "list only secrets nothing uses")
	f.BoolVar(&opts.json, "json", false, "print the index as JSON")
	return cmd
}

// lsEntry is one secret of `secrets ls`, as --json prints it.
type lsEntry struct {
	Name      string        `json:"name"`
	Stored    bool          `json:"stored"`
	Source    string        `json:"source"`
	Reference string        `json:"reference"`
	SyncedAt  *time.Time    `json:"synced_at"`
	UsedBy    []secrets.Use `json:"used_by"`
}

type lsReport struct {
	Store   map[string]string      `json:"store"`
	Secrets []lsEntry              `json:"secrets"`
	Stale   []secrets.StaleProject `json:"stale"`
}

func runSecretsLs(ctx context.Context, a *App, o secretsLsOptions) error {
	cfg, err := a.secretsConfig()
	if err != nil {
		return err
	}
	x, err := a.secretsIndex()
	if err != nil {
		return err
	}
	m, choice, unlock, err := a.openSecrets(ctx, false, false)
	if err != nil {
		return err
	}
	defer unlock()
	stored, err := m.Store.List(ctx)
	if err != nil {
		return err
	}
	rep := lsReport{Store: map[string]string{"kind": choice.Store.Kind(), "why": choice.Why}, Secrets: []lsEntry{}, Stale: x.Stale}
	for _, name := range lsNames(stored, cfg.Mappings, m.State, x) {
		e := lsEntry{Name: name, Stored: slices.Contains(stored, name), UsedBy: x.UsesOf(name)}
		if e.UsedBy == nil {
			e.UsedBy = []secrets.Use{}
		}
		if rec, ok := m.State.Secrets[name]; ok {
			e.Source, e.Reference, e.SyncedAt = rec.Source, rec.Reference, &rec.SyncedAt
		}
		if mp, ok := cfg.Lookup(name); ok {
			e.Source, e.Reference = mp.Kind(), secrets.SourceRef(mp)
		}
		if o.unused && len(e.UsedBy) > 0 {
			continue
		}
		rep.Secrets = append(rep.Secrets, e)
	}
	if o.json {
		return a.writeJSON(rep)
	}
	a.printLs(rep, o.verbose)
	return nil
}

// lsNames is every secret the store holds, secrets.yaml maps, secrets.json records or a
// project uses, sorted.
func lsNames(stored []string, mappings []config.SecretMapping, st *secrets.State, x *secrets.Index) []string {
	set := map[string]bool{}
	for _, n := range stored {
		set[n] = true
	}
	for _, mp := range mappings {
		set[mp.Secret] = true
	}
	for n := range st.Secrets {
		set[n] = true
	}
	for _, n := range x.Secrets() {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (a *App) printLs(rep lsReport, verbose bool) {
	head := []string{"secret", "store", "source"}
	if verbose {
		head = append(head, "reference", "last sync")
	}
	rows := [][]string{append(head, "used by")}
	for _, e := range rep.Secrets {
		row := []string{e.Name, yesNo(e.Stored), orDash(e.Source)}
		if verbose {
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
	if len(rep.Secrets) == 0 {
		fmt.Fprintln(a.Out, "no secrets")
	} else {
		table(a.Out, rows)
	}
	for _, s := range rep.Stale {
		fmt.Fprintf(a.Out, "stale: %s: %s; its uses above come from its registry entry and approved manifest\n", staleName(s), s.Reason)
	}
	fmt.Fprintf(a.Err, "store: %s (%s)\n", rep.Store["kind"], rep.Store["why"])
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
