package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/secrets"
)

type secretsSetOptions struct {
	file, env  string
	stdin      bool
	allowLoose bool
}

func newSecretsSetCmd(a *App) *cobra.Command {
	var opts secretsSetOptions
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Store one secret from a prompt, a file, an env var or stdin",
		Long: `Set stores one value under NAME and records its salted digest. The value comes from a no-echo
prompt on a terminal (the default), --file (refused if group- or world-readable, trailing newline
stripped), --env (a variable of abox's environment) or --stdin (trailing newlines stripped).
Empty values and values holding a line break are refused. The value is never printed and never
passed in an argv: it reaches the store over a pipe or a 0600 file.

NAME is the catalog's secret name, such as github.personal_access_token.`,
		Args: cobra.ExactArgs(1),
		RunE: a.secretsRun(func(ctx context.Context, h *secrets.Host, args []string) error {
			return runSecretsSet(ctx, a, h, opts, args[0])
		}),
	}
	f := cmd.Flags()
	f.StringVar(&opts.file, "file", "", "read the value from this file")
	f.StringVar(&opts.env, "env", "", "read the value from this environment variable")
	f.BoolVar(&opts.stdin, "stdin", false, "read the value from standard input")
	f.BoolVar(&opts.allowLoose, "allow-loose-perms", false, "accept a --file other users can read")
	cmd.MarkFlagsMutuallyExclusive("file", "env", "stdin")
	return cmd
}

func runSecretsSet(ctx context.Context, a *App, h *secrets.Host, o secretsSetOptions, name string) error {
	g := secrets.Given{File: o.file, Env: o.env}
	if o.stdin {
		g.Stdin = a.In
	}
	res, err := h.Set(ctx, name, g, o.allowLoose)
	if err == nil {
		res.WriteText(a.Out, a.Err)
	}
	return err
}

type secretsRmOptions struct {
	dir   string
	force bool
}

func newSecretsRmCmd(a *App) *cobra.Command {
	var opts secretsRmOptions
	cmd := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove secrets from the store (refused while referenced)",
		Long: `Rm removes secrets from the store, drops their digests from secrets.json and their lines from
every gateway's secrets file. It refuses while a registered project still uses a secret — attached
to its agent, declared by one of its servers, or used by a remote server — and lists who; --force
removes it anyway (the gateway then refuses to start until it is stored again).`,
		Args: cobra.MinimumNArgs(1),
		RunE: a.secretsRun(func(ctx context.Context, h *secrets.Host, args []string) error {
			return runSecretsRm(ctx, a, h, opts, args)
		}),
	}
	addDirFlag(cmd, &opts.dir)
	cmd.Flags().BoolVar(&opts.force, "force", false, "remove secrets that are still referenced")
	return cmd
}

func runSecretsRm(ctx context.Context, a *App, h *secrets.Host, o secretsRmOptions, names []string) error {
	rep, err := h.Remove(ctx, names, o.force)
	if rep != nil {
		rep.WriteText(a.Out)
	}
	return err
}
