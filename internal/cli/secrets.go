package cli

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/secrets"
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

// secretsHost is the host as the secrets commands see it, with a no-echo prompt when abox runs
// on a terminal.
func (a *App) secretsHost() (*secrets.Host, error) {
	ps, err := a.Paths()
	if err != nil {
		return nil, err
	}
	return a.secretsHostAt(ps), nil
}

func (a *App) secretsHostAt(ps paths.Paths) *secrets.Host {
	h := &secrets.Host{Docker: a.docker(), Paths: ps, MCPHome: a.mcpHome(), Env: a.Env, Home: a.getenv("HOME"), Now: a.Now, Warn: a.warnf}
	if f, ok := a.In.(*os.File); ok && a.TTY {
		h.Prompt = secrets.TerminalPrompt(int(f.Fd()), a.Err, nil)
	}
	return h
}

// secretsRun is the RunE of a command that works on the secrets store: run gets the host, and
// its error the hint that names the fix.
func (a *App) secretsRun(run func(context.Context, *secrets.Host, []string) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		h, err := a.secretsHost()
		if err != nil {
			return err
		}
		return secretsHint(run(c.Context(), h, args))
	}
}

// secretSources reads values from the host, for doctor ([secrets.Host.Sources]).
func (a *App) secretSources(allowLoose bool) *secrets.Sources {
	return a.secretsHostAt(paths.Paths{}).Sources(allowLoose)
}

// gatewaySecrets renders the secrets file of the gateway serving u ([secrets.Host.GatewaySecrets]).
func (a *App) gatewaySecrets(ctx context.Context, ps paths.Paths, u *gateway.Union, cat *catalog.Catalog) (gateway.Secrets, error) {
	out, err := a.secretsHostAt(ps).GatewaySecrets(ctx, u, cat)
	return out, secretsHint(err)
}

// secretsHint names the fix of an error of the secrets commands that has no hint yet.
func secretsHint(err error) error {
	if hintOf(err) != "" {
		return err
	}
	var (
		de *secrets.DetectError
		oe *secrets.OpenError
		ce *secrets.ConfigError
		re *secrets.ReadError
		ae *secrets.AttentionError
		ue *secrets.UnmappedError
	)
	switch {
	case errors.As(err, &de) && (errors.Is(err, docker.ErrDaemonUnreachable) || errors.Is(err, secrets.ErrNoDaemon)):
		return withHint(err, "start the Docker daemon (or Docker Desktop), then retry")
	case errors.As(err, &de):
		return withHint(err, "check that the docker CLI works (`docker version`)")
	case errors.As(err, &oe) && oe.Salt:
		return withHint(err, "move "+oe.File+" away; `abox secrets sync` then records fresh digests")
	case errors.As(err, &oe):
		return withHint(err, "fix or remove "+oe.File+"; `abox secrets sync` rebuilds it")
	case errors.As(err, &ce):
		return withHint(err, "fix "+ce.File)
	case errors.As(err, new(*secrets.NameError)):
		return withHint(err, "use letters, digits, '.', '_' and '-', starting with a letter or digit (for example github.personal_access_token)")
	case errors.As(err, &re):
		return withHint(err, readHint(re))
	case errors.As(err, new(*secrets.PutError)):
		return withHint(err, "retry with --verbose to see the docker commands")
	case errors.As(err, &ue):
		return withHint(err, "map it in secrets.yaml, or store it directly with `abox secrets set "+termtext.Line(ue.Name)+"`")
	case errors.As(err, new(*secrets.InUseError)):
		return withHint(err, "detach or undeclare it first (`abox secrets detach ENV`, `abox mcp rm SERVER`), or pass --force")
	case errors.As(err, &ae):
		return withHint(err, attentionHint(ae))
	case errors.As(err, new(*secrets.GatewayFileError)):
		return withHint(err, "store the value again with `abox secrets set NAME`")
	}
	return err
}

func readHint(re *secrets.ReadError) string {
	switch {
	case errors.Is(re, secrets.ErrEmpty):
		return "an empty secret is refused: the gateway would drop the variable"
	case errors.Is(re, secrets.ErrLoosePerms):
		return "`chmod 600 " + re.File + "`, or pass --allow-loose-perms"
	case errors.Is(re, secrets.ErrNoTerminal):
		return "pipe the value with `abox secrets set " + re.Name + " --stdin`, or use --file or --env"
	}
	return "nothing was stored; fix the source and retry"
}

func attentionHint(ae *secrets.AttentionError) string {
	switch ae.Fix.Status {
	case secrets.MissingInStore, secrets.Unmapped:
		return "store it with `abox secrets set " + ae.Fix.Secret + "`, or map it in secrets.yaml and run `abox secrets sync`"
	case secrets.Drifted:
		return "run `abox secrets sync` to store the current values"
	}
	return "fix the sources named in the detail column, then run `abox secrets " + ae.Verb + "` again"
}
