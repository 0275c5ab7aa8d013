package cli

import (
	"context"

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
		RunE: a.secretsRun(func(ctx context.Context, h *secrets.Host, _ []string) error { return runSecretsLs(ctx, a, h, opts) }),
	}
	f := cmd.Flags()
	f.BoolVarP(&opts.verbose, "wide", "v", false, "also show each secret's reference and last sync (not --verbose, which traces docker)")
	f.BoolVar(&opts.unused, "unused", false, "list only secrets nothing uses")
	f.BoolVar(&opts.json, "json", false, "print the index as JSON")
	return cmd
}

func runSecretsLs(ctx context.Context, a *App, h *secrets.Host, o secretsLsOptions) error {
	rep, err := h.List(ctx, o.unused)
	switch {
	case err != nil:
		return err
	case o.json:
		return a.writeJSON(rep)
	}
	rep.WriteText(a.Out, a.Err, o.verbose)
	return nil
}
