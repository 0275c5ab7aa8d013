package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

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

type lsReport struct {
	Store   map[string]string      `json:"store"`
	Secrets []secrets.Listing      `json:"secrets"`
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
	rep := lsReport{Store: map[string]string{"kind": choice.Store.Kind(), "why": choice.Why},
		Secrets: secrets.List(stored, cfg, m.State, x, o.unused), Stale: x.Stale}
	if o.json {
		return a.writeJSON(rep)
	}
	a.printLs(rep, o.verbose)
	return nil
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
