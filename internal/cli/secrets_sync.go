package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/secrets"
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
		RunE: a.secretsRun(func(ctx context.Context, h *secrets.Host, _ []string) error { return runSecretsSync(ctx, a, h, opts) }),
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.only, "only", nil, "sync only this secret (repeatable)")
	f.BoolVar(&opts.dryRun, "dry-run", false, "report what would change; write nothing")
	f.BoolVar(&opts.interactive, "interactive", false, "also ask for source: prompt secrets")
	f.BoolVar(&opts.allowLoose, "allow-loose-perms", false, "accept file sources other users can read")
	return cmd
}

func runSecretsSync(ctx context.Context, a *App, h *secrets.Host, o secretsSyncOptions) error {
	return a.writeRows(h.Sync(ctx, o.only, o.interactive, o.dryRun, o.allowLoose))
}

// writeRows prints a sync or check report, failing (exit 1) when a row needs attention.
func (a *App) writeRows(rep *secrets.RowsReport, err error) error {
	if err != nil {
		return err
	}
	rep.WriteText(a.Out, a.Err)
	return rep.Verdict()
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
		RunE: a.secretsRun(func(ctx context.Context, h *secrets.Host, _ []string) error { return runSecretsCheck(ctx, a, h, opts) }),
	}
	addDirFlag(cmd, &opts.dir)
	return cmd
}

func runSecretsCheck(ctx context.Context, a *App, h *secrets.Host, o secretsCheckOptions) error {
	return a.writeRows(h.Check(ctx, func() ([]secrets.Need, error) { return a.requiredSecrets(h.Paths, o.dir) }))
}

// requiredSecrets returns what the project at dir requires ([project.RequiredSecretsAt]); none
// when dir is in no project.
func (a *App) requiredSecrets(ps paths.Paths, dir string) ([]secrets.Need, error) {
	need, err := project.RequiredSecretsAt(dir, ps, a.mcpHome())
	return need, remedy.Load(err)
}
