package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/termtext"
)

const secretsLong = `Secrets reach MCP servers through the gateway, never the agent, unless you attach one.

secrets.yaml (in abox's configuration directory) says where each value comes from: op (1Password),
file (refused if group- or world-readable), env, source: prompt, or source: docker (already in
the store). sync pushes every readable source into the store; set stores one value; check reports
drift without printing values; ls shows who uses each secret across every registered project.

The store is Docker Desktop's secrets engine when the host has it (the gateway then gets se://
references); on plain Docker Engine it is abox's own: one 0600 file per secret in a 0700
directory of the state directory, plus each gateway's secrets.env, protected by file permissions
only. abox doctor states which one is in use on every run. Values travel over pipes and 0600
files, never in an argv, a log line or an error message.`

func newSecretsCmd(a *App) *cobra.Command {
	c := groupCmd("secrets", "Manage secrets: sources, the store, and what uses them",
		newSecretsSyncCmd(a), newSecretsCheckCmd(a), newSecretsSetCmd(a), newSecretsLsCmd(a),
		newSecretsAttachCmd(a), newSecretsDetachCmd(a), newSecretsRmCmd(a))
	c.Long = secretsLong
	return c
}

// secretStore picks the store this host has, with a hint when it cannot tell.
func (a *App) secretStore(ctx context.Context, ps paths.Paths) (secrets.Choice, error) {
	c, err := secrets.Detect(ctx, a.docker(), ps.SecretsStore())
	switch {
	case errors.Is(err, docker.ErrDaemonUnreachable) || errors.Is(err, secrets.ErrNoDaemon):
		return c, withHint(err, "start the Docker daemon (or Docker Desktop), then retry")
	case err != nil:
		return c, withHint(err, "check that the docker CLI works (`docker version`)")
	}
	return c, nil
}

// secretSources reads values from the host: its environment, its home for ~, op on PATH, and a
// no-echo prompt when abox runs on a terminal.
func (a *App) secretSources(allowLoose bool) *secrets.Sources {
	return &secrets.Sources{Env: a.Env, Home: a.getenv("HOME"), Prompt: a.secretPrompt(), AllowLoosePerms: allowLoose}
}

// secretPrompt returns a prompt that reads a value without echo, or nil without a terminal.
func (a *App) secretPrompt() func(string) ([]byte, error) {
	f, ok := a.In.(*os.File)
	if !a.TTY || !ok {
		return nil
	}
	return func(label string) ([]byte, error) {
		fmt.Fprintf(a.Err, "%s (typing is hidden): ", label)
		v, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.Err)
		if err != nil {
			return nil, fmt.Errorf("reading the prompt: %w", err)
		}
		return v, nil
	}
}

// openSecrets prepares a [secrets.Manager] on the host's store. When lock is set it holds the
// secrets lock until the returned func is called.
func (a *App) openSecrets(ctx context.Context, lock, allowLoose bool) (*secrets.Manager, secrets.Choice, func(), error) {
	noop := func() {}
	ps, err := a.Paths()
	if err != nil {
		return nil, secrets.Choice{}, noop, err
	}
	choice, err := a.secretStore(ctx, ps)
	if err != nil {
		return nil, choice, noop, err
	}
	unlock := noop
	if lock {
		if unlock, err = statefs.Lock(ps.SecretsLock()); err != nil {
			return nil, choice, noop, err
		}
	}
	m, err := secrets.Open(ps, choice.Store, a.secretSources(allowLoose), a.Now)
	var oe *secrets.OpenError
	switch {
	case errors.As(err, &oe) && oe.File == ps.SecretsSalt():
		unlock()
		return nil, choice, noop, withHint(err, "move "+ps.SecretsSalt()+" away; `abox secrets sync` then records fresh digests")
	case err != nil:
		unlock()
		return nil, choice, noop, withHint(err, "fix or remove "+ps.SecretsState()+"; `abox secrets sync` rebuilds it")
	}
	return m, choice, unlock, nil
}

// secretsConfig reads secrets.yaml; a missing file maps nothing.
func (a *App) secretsConfig() (*config.Secrets, error) {
	ps, err := a.Paths()
	if err != nil {
		return nil, err
	}
	s, err := config.LoadSecrets(ps.SecretsFile())
	if err != nil {
		return nil, withHint(err, "fix "+ps.SecretsFile())
	}
	return s, nil
}

// secretsIndex builds the reverse index over every registered project.
func (a *App) secretsIndex() (*secrets.Index, error) {
	cfgPaths, err := a.Paths()
	if err != nil {
		return nil, err
	}
	custom, err := config.LoadCustomServers(cfgPaths.CustomServersFile())
	if err != nil {
		return nil, withHint(err, "fix "+cfgPaths.CustomServersFile())
	}
	cat, err := catalog.Load(a.mcpHome(), custom)
	if err != nil {
		return nil, err
	}
	return secrets.BuildIndex(cfgPaths, cat)
}

// checkSecretName refuses a name the store cannot hold, with the rule.
func checkSecretName(name string) error {
	if manifest.IsSecretName(name) {
		return nil
	}
	return errorf("use letters, digits, '.', '_' and '-', starting with a letter or digit (for example github.personal_access_token)",
		"%q is not a valid secret name", termtext.Line(name))
}

// secretRowsTable prints sync and check rows as a table.
func (a *App) secretRowsTable(rows []secrets.Row) {
	out := [][]string{{"secret", "status", "source", "detail"}}
	for _, r := range rows {
		out = append(out, []string{r.Secret, r.Status, orDash(r.Source), orDash(termtext.Line(r.Detail))})
	}
	table(a.Out, out)
}

// usedByServers reports whether any registered project hands name to a server or a remote
// server, so that a new value needs the gateway recreated.
func (a *App) usedByServers(names ...string) bool {
	x, err := a.secretsIndex()
	return err == nil && x.ServedAny(names...)
}
