package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/secrets"
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
	rep, err := a.secretsHostAt(p.Paths).Attach(ctx, pairs, a.editor(ctx, p))
	if err != nil {
		return err
	}
	rep.WriteText(a.Out)
	a.warnAttached(p, rep.Attached)
	fmt.Fprintln(a.Out, "the next `abox run` or `abox shell` starts the agent with them")
	return nil
}

// editor is [App.mutate] on p, as the secrets package edits a manifest.
func (a *App) editor(ctx context.Context, p *project.Project) secrets.Edit {
	return func(edit func(*manifest.Doc) error) (*manifest.Manifest, error) { return a.mutate(ctx, p, edit) }
}

// warnAttached states what attaching means ([secrets.Exposure]), with the project's number of
// allowed domains.
func (a *App) warnAttached(p *project.Project, attached map[string]string) {
	allowed := -1
	if rs, err := artifact.ReadRunSpec(p.State); err == nil {
		allowed = rs.Egress
	}
	if warning, hint := secrets.Exposure(attached, allowed); warning != "" {
		a.warnf(hint, "%s", warning)
	}
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
	if err := manifest.ParseEnvArgs("abox secrets detach", envs); err != nil {
		return err
	}
	p, err := a.loadProject(o.dir)
	if err != nil {
		return err
	}
	rep, err := a.secretsHostAt(p.Paths).Detach(p.Manifest, envs, a.editor(ctx, p))
	if rep == nil || err != nil {
		return err
	}
	rep.WriteText(a.Out)
	a.warnAttached(p, rep.Attached)
	return nil
}
