package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/secrets"
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
		return remedy.Secrets(run(c.Context(), h, args))
	}
}

// secretSources reads values from the host, for doctor ([secrets.Host.Sources]).
func (a *App) secretSources(allowLoose bool) *secrets.Sources {
	return a.secretsHostAt(paths.Paths{}).Sources(allowLoose)
}

// gatewaySecrets renders the secrets file of the gateway serving u ([secrets.Host.GatewaySecrets]).
func (a *App) gatewaySecrets(ctx context.Context, ps paths.Paths, u *gateway.Union, cat *catalog.Catalog) (gateway.Secrets, error) {
	out, err := a.secretsHostAt(ps).GatewaySecrets(ctx, u, cat)
	return out, remedy.Secrets(err)
}
