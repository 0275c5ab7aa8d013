package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/termtext"
)

type secretsAttachOptions struct{ dir string }

func newSecretsAttachCmd(a *App) *cobra.Command {
	var opts secretsAttachOptions
	cmd := &cobra.Command{
		Use:   "attach ENV=NAME...",
		Short: "Hand a stored secret to the agent as an environment variable",
		Long: `Attach records ENV=NAME in the manifest's env_secrets: every later run starts the agent with the
stored secret NAME in its environment variable ENV.

This is the one place abox weakens its own invariant, and every run and abox doctor say so: the
agent can read, print and send the value to any allowed domain, so the egress allowlist becomes
its boundary, and the value shows in docker inspect of the agent container. abox hands it over
on docker create's standard input, so it is in no argv and in no file abox writes.
abox secrets detach ENV takes it back.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runSecretsAttach(c.Context(), a, opts, args) },
	}
	addDirFlag(cmd, &opts.dir)
	return cmd
}

func runSecretsAttach(ctx context.Context, a *App, o secretsAttachOptions, args []string) error {
	pairs, err := manifest.ParseEnvSecretArgs("abox secrets attach", args)
	if err != nil {
		return err
	}
	p, err := a.loadProject(o.dir)
	if err != nil {
		return err
	}
	m, err := a.mutate(ctx, p, func(d *manifest.Doc) error {
		for _, pr := range pairs {
			if err := d.AttachSecret(pr.Env, pr.Secret); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	stored := a.storedNames(ctx)
	for _, pr := range pairs {
		state := "in the store"
		switch {
		case stored == nil:
			state = "the store was not checked"
		case !slices.Contains(stored, pr.Secret):
			state = "not in the store yet: `abox secrets set " + pr.Secret + "`"
		}
		fmt.Fprintf(a.Out, "attached %s ← %s (%s)\n", pr.Env, pr.Secret, state)
	}
	a.warnAttached(p, m.EnvSecrets)
	fmt.Fprintln(a.Out, "the next `abox run` or `abox shell` starts the agent with them")
	return nil
}

// storedNames lists the store, or nil when it cannot be asked (no daemon).
func (a *App) storedNames(ctx context.Context) []string {
	ps, err := a.Paths()
	if err != nil {
		return nil
	}
	c, err := secrets.Detect(ctx, a.docker(), ps.SecretsStore())
	if err != nil {
		return nil
	}
	names, err := c.Store.List(ctx)
	if err != nil {
		return nil
	}
	return append([]string{}, names...)
}

// warnAttached states what attaching means, with the project's number of allowed domains.
func (a *App) warnAttached(p *project.Project, attached map[string]string) {
	if len(attached) == 0 {
		return
	}
	var list []string
	for _, env := range slices.Sorted(maps.Keys(attached)) {
		list = append(list, env+"←"+attached[env])
	}
	domains := "any allowed domain"
	if rs, err := artifact.ReadRunSpec(p.State); err == nil {
		domains = fmt.Sprintf("any of the %d allowed domains", rs.Egress)
	}
	a.warnf(fmt.Sprintf("the agent can read, print and send them to %s — keep the egress list tight (`abox egress list`), "+
		"and expect them in `docker inspect` of the agent container; `abox secrets detach ENV` takes one back", domains),
		"the agent holds secrets in its environment: %s: %s", plural(len(list), "secret", "secrets"), strings.Join(list, ", "))
}

type secretsDetachOptions struct{ dir string }

func newSecretsDetachCmd(a *App) *cobra.Command {
	var opts secretsDetachOptions
	cmd := &cobra.Command{
		Use:   "detach ENV...",
		Short: "Take an attached secret back",
		Long: `Detach removes ENV from the manifest's env_secrets: the next run starts the agent without it.
The secret stays in the store (abox secrets rm removes it).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runSecretsDetach(c.Context(), a, opts, args) },
	}
	addDirFlag(cmd, &opts.dir)
	return cmd
}

func runSecretsDetach(ctx context.Context, a *App, o secretsDetachOptions, envs []string) error {
	for i, env := range envs {
		if !manifest.IsEnvName(env) {
			return &manifest.Error{Source: "abox secrets detach", Problems: []manifest.Problem{{
				Loc: fmt.Sprintf("argument %d", i+1), Msg: fmt.Sprintf("%q is not a valid environment variable name", termtext.Line(env)),
				Hint: "name the variable only, without =NAME: abox secrets detach API_KEY"}}}
		}
	}
	p, err := a.loadProject(o.dir)
	if err != nil {
		return err
	}
	was := p.Manifest.EnvSecrets
	var gone, absent []string
	for _, env := range envs {
		if _, ok := was[env]; ok {
			gone = append(gone, env)
		} else {
			absent = append(absent, env)
		}
	}
	for _, env := range absent {
		a.warnf("", "%s is not attached", env)
	}
	if len(gone) == 0 {
		return nil
	}
	m, err := a.mutate(ctx, p, func(d *manifest.Doc) error {
		d.DetachSecrets(gone...)
		return nil
	})
	if err != nil {
		return err
	}
	for _, env := range gone {
		fmt.Fprintf(a.Out, "detached %s (was ← %s); the next run starts the agent without it\n", env, was[env])
	}
	a.warnAttached(p, m.EnvSecrets)
	return nil
}
