package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/termtext"
)

type secretsSyncOptions struct {
	only        []string
	dryRun      bool
	interactive bool
	allowLoose  bool
}

func newSecretsSyncCmd(a *App) *cobra.Command {
	var opts secretsSyncOptions
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Push every readable source of secrets.yaml into the store",
		Long: `Sync reads each secret's source from secrets.yaml and stores the value when it differs from
the store's, recording a salted digest. Each secret gets a row: created, updated, unchanged,
external (source: docker, already in the store), or unreadable with the reason. Prompt sources
are asked only with --interactive. Values are never printed.

Exit status 1 when any secret could not be synced.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSecretsSync(c.Context(), a, opts) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.only, "only", nil, "sync only this secret (repeatable)")
	f.BoolVar(&opts.dryRun, "dry-run", false, "report what would change; write nothing")
	f.BoolVar(&opts.interactive, "interactive", false, "also ask for source: prompt secrets")
	f.BoolVar(&opts.allowLoose, "allow-loose-perms", false, "accept file sources other users can read")
	return cmd
}

func runSecretsSync(ctx context.Context, a *App, o secretsSyncOptions) error {
	cfg, err := a.secretsConfig()
	if err != nil {
		return err
	}
	mappings, unmapped := cfg.Select(o.only)
	if unmapped != "" {
		return errorf("map it in secrets.yaml, or store it directly with `abox secrets set "+termtext.Line(unmapped)+"`",
			"--only %q: secrets.yaml does not map it", termtext.Line(unmapped))
	}
	if len(mappings) == 0 {
		ps, _ := a.Paths()
		fmt.Fprintf(a.Out, "%s maps no secret; nothing to sync\n", ps.SecretsFile())
		return nil
	}
	m, choice, unlock, err := a.openSecrets(ctx, !o.dryRun, o.allowLoose)
	if err != nil {
		return err
	}
	defer unlock()
	var rows []secrets.Row
	for _, mp := range mappings {
		rows = append(rows, m.Sync(ctx, mp, o.interactive, o.dryRun))
	}
	a.secretRowsTable(rows)
	fmt.Fprintf(a.Err, "store: %s (%s)\n", choice.Store.Kind(), choice.Why)
	if changed := secrets.Changed(rows); len(changed) > 0 && !o.dryRun && a.usedByServers(changed...) {
		fmt.Fprintln(a.Err, "next: `abox gateway up` (or `abox up`) hands the new values to the gateway")
	}
	return rowsVerdict(rows, "sync")
}

// rowsVerdict turns the failed rows into an error (exit 1) with the command that fixes them.
func rowsVerdict(rows []secrets.Row, verb string) error {
	var bad []string
	hint := "fix the sources named in the detail column, then run `abox secrets " + verb + "` again"
	for _, r := range rows {
		if r.OK() {
			continue
		}
		bad = append(bad, r.Secret+" ("+r.Status+")")
		switch r.Status {
		case secrets.MissingInStore, secrets.Unmapped:
			hint = "store it with `abox secrets set " + r.Secret + "`, or map it in secrets.yaml and run `abox secrets sync`"
		case secrets.Drifted:
			hint = "run `abox secrets sync` to store the current values"
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return errorf(hint, "%d of %d secrets need attention: %s", len(bad), len(rows), strings.Join(bad, ", "))
}

type secretsCheckOptions struct{ dir string }

func newSecretsCheckCmd(a *App) *cobra.Command {
	var opts secretsCheckOptions
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Report drift between sources and the store (never prints values)",
		Long: `Check compares every source in secrets.yaml with the store and writes nothing: synced,
drifted, missing-in-store, external (prompt and docker sources, not re-read) or unreadable.

In a project (the current directory or --dir), it also checks every secret the project requires —
attached to the agent, declared by its servers, or used by its remote servers' headers — which
is exactly what abox doctor checks: a required secret neither mapped nor stored is unmapped.

Exit status 1 when any secret needs attention.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSecretsCheck(c.Context(), a, opts) },
	}
	addDirFlag(cmd, &opts.dir)
	return cmd
}

func runSecretsCheck(ctx context.Context, a *App, o secretsCheckOptions) error {
	cfg, err := a.secretsConfig()
	if err != nil {
		return err
	}
	required, err := a.requiredSecrets(o.dir)
	if err != nil {
		return err
	}
	m, choice, unlock, err := a.openSecrets(ctx, false, false)
	if err != nil {
		return err
	}
	defer unlock()
	var rows []secrets.Row
	for _, mp := range cfg.Mappings {
		rows = append(rows, m.Check(ctx, mp))
	}
	for _, name := range secrets.Names(required) {
		if _, ok := cfg.Lookup(name); !ok {
			rows = append(rows, m.CheckUnmapped(ctx, name))
		}
	}
	for i, r := range rows {
		if users := secrets.UsersOf(required, r.Secret); users != "" && !r.OK() {
			rows[i].Detail = strings.TrimPrefix(r.Detail+"; needed by "+users, "; ")
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.Out, "no secret is mapped in secrets.yaml or required here; nothing to check")
		return nil
	}
	a.secretRowsTable(rows)
	fmt.Fprintf(a.Err, "store: %s (%s)\n", choice.Store.Kind(), choice.Why)
	return rowsVerdict(rows, "check")
}

// requiredSecrets returns what the project at dir requires ([project.RequiredSecrets]); none
// when dir is in no project.
func (a *App) requiredSecrets(dir string) ([]secrets.Need, error) {
	ws, err := manifest.Find(dir)
	if errors.Is(err, manifest.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ps, err := a.Paths()
	if err != nil {
		return nil, err
	}
	need, err := project.RequiredSecrets(ws, ps, a.mcpHome())
	return need, explainLoad(err)
}
