package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
		RunE: func(c *cobra.Command, args []string) error { return runSecretsSet(c.Context(), a, opts, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&opts.file, "file", "", "read the value from this file")
	f.StringVar(&opts.env, "env", "", "read the value from this environment variable")
	f.BoolVar(&opts.stdin, "stdin", false, "read the value from standard input")
	f.BoolVar(&opts.allowLoose, "allow-loose-perms", false, "accept a --file other users can read")
	cmd.MarkFlagsMutuallyExclusive("file", "env", "stdin")
	return cmd
}

func runSecretsSet(ctx context.Context, a *App, o secretsSetOptions, name string) error {
	if err := checkSecretName(name); err != nil {
		return err
	}
	src := a.secretSources(o.allowLoose)
	value, source, ref, err := readSetValue(a, src, o, name)
	if err != nil {
		return err
	}
	m, choice, unlock, err := a.openSecrets(ctx, true, o.allowLoose)
	if err != nil {
		return err
	}
	defer unlock()
	status, err := m.Put(ctx, name, value, source, ref, false)
	if err != nil {
		return withHint(fmt.Errorf("storing %s: %w", name, err), "retry with --verbose to see the docker commands")
	}
	fmt.Fprintf(a.Out, "%s %s in the %s store\n", status, name, choice.Store.Kind())
	if status != secrets.Unchanged && a.usedByServers(name) {
		fmt.Fprintln(a.Err, "next: `abox gateway up` (or `abox up`) hands the new value to the gateway")
	}
	return nil
}

// readSetValue reads the value from the one source the flags name, or the prompt, with a hint
// that names the fix.
func readSetValue(a *App, src *secrets.Sources, o secretsSetOptions, name string) (value []byte, source, ref string, err error) {
	g := secrets.Given{File: o.file, Env: o.env}
	if o.stdin {
		g.Stdin = a.In
	}
	value, source, ref, err = src.ReadGiven(g, "value of "+name)
	switch {
	case errors.Is(err, secrets.ErrLoosePerms):
		err = withHint(err, "`chmod 600 "+o.file+"`, or pass --allow-loose-perms")
	case errors.Is(err, secrets.ErrNoTerminal):
		err = withHint(err, "pipe the value with `abox secrets set "+name+" --stdin`, or use --file or --env")
	}
	if errors.Is(err, secrets.ErrEmpty) {
		err = withHint(err, "an empty secret is refused: the gateway would drop the variable")
	}
	if err != nil && hintOf(err) == "" {
		err = withHint(err, "nothing was stored; fix the source and retry")
	}
	return value, source, ref, err
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
		RunE: func(c *cobra.Command, args []string) error { return runSecretsRm(c.Context(), a, opts, args) },
	}
	addDirFlag(cmd, &opts.dir)
	cmd.Flags().BoolVar(&opts.force, "force", false, "remove secrets that are still referenced")
	return cmd
}

func runSecretsRm(ctx context.Context, a *App, o secretsRmOptions, names []string) error {
	for _, n := range names {
		if err := checkSecretName(n); err != nil {
			return err
		}
	}
	x, err := a.secretsIndex()
	if err != nil {
		return err
	}
	if err := refuseReferenced(x, names, o.force); err != nil {
		return err
	}
	for _, s := range x.Stale {
		a.warnf("", "%s: %s; what it uses may be missing above", staleName(s), s.Reason)
	}
	m, choice, unlock, err := a.openSecrets(ctx, true, false)
	if err != nil {
		return err
	}
	defer unlock()
	ps, err := a.Paths()
	if err != nil {
		return err
	}
	for _, n := range names {
		was, err := m.Purge(ctx, n, ps.GatewaysDir())
		if err != nil {
			return err
		}
		if was {
			fmt.Fprintf(a.Out, "removed %s from the %s store\n", n, choice.Store.Kind())
		} else {
			fmt.Fprintf(a.Out, "%s was not in the %s store; its record is gone\n", n, choice.Store.Kind())
		}
	}
	return nil
}

// refuseReferenced refuses to remove secrets a registered project uses, naming every use.
func refuseReferenced(x *secrets.Index, names []string, force bool) error {
	var lines []string
	for _, n := range names {
		var who []string
		for _, u := range x.UsesOf(n) {
			who = append(who, useText(u))
		}
		if len(who) > 0 {
			lines = append(lines, n+" is used by "+strings.Join(who, ", "))
		}
	}
	if len(lines) == 0 || force {
		return nil
	}
	return errorf("detach or undeclare it first (`abox secrets detach ENV`, `abox mcp rm SERVER`), or pass --force",
		"refusing to remove a secret in use:\n%s", strings.Join(lines, "\n"))
}

// useText is "alpha → env DATABASE_URL", marked when read from a stale project.
func useText(u secrets.Use) string {
	s := u.Project + " → " + u.String()
	if u.Stale {
		s += " (stale project)"
	}
	return s
}

func staleName(s secrets.StaleProject) string {
	if s.Project == "" {
		return "profile " + s.Profile
	}
	return fmt.Sprintf("project %s (profile %s, %s)", s.Project, s.Profile, s.Workspace)
}
