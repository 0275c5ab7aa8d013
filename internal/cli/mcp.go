package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/remedy"
)

func newMCPCmd(a *App) *cobra.Command {
	return groupCmd("mcp", "Manage the MCP servers the agent reaches through the gateway",
		newMCPListCmd(a), newMCPAddCmd(a), newMCPRmCmd(a), newMCPAddRemoteCmd(a), newMCPRmRemoteCmd(a),
		newMCPImportCmd(a), newMCPCostCmd(a), newMCPOAuthCmd(a))
}

type mcpAddOptions struct {
	dir   string
	tools []string
}

func newMCPAddCmd(a *App) *cobra.Command {
	var opts mcpAddOptions
	cmd := &cobra.Command{
		Use:   "add SERVER",
		Short: "Declare a catalog or custom server (--tool narrows it)",
		Long: `Add declares SERVER, which must be in a Docker MCP catalog on this host or in
custom-servers.yaml. --tool (repeatable) narrows the server to those tools, replacing any
narrowing it had; netd then lists and forwards only them. The manifest keeps its comments, is
re-rendered, and its approval follows the edit. ` + "`abox up`" + ` starts the server in the gateway.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runMCPAdd(c.Context(), a, opts, args[0]) },
	}
	addDirFlag(cmd, &opts.dir)
	cmd.Flags().StringArrayVar(&opts.tools, "tool", nil, "allow only this tool of the server (repeatable)")
	return cmd
}

func runMCPAdd(ctx context.Context, a *App, o mcpAddOptions, server string) error {
	p, err := a.loadProject(o.dir)
	if err != nil {
		return err
	}
	d, err := edit.AddServer(ctx, p, a.editEnv(), server, o.tools)
	if err != nil {
		return remedy.MCP(remedy.Edit(err))
	}
	switch {
	case d.Remote:
		fmt.Fprintln(a.Out, declared(server, o.tools))
		fmt.Fprintln(a.Out, "next: `abox up` reconciles the gateway")
	case d.Already:
		fmt.Fprintf(a.Out, "%s is already declared\n", server)
	default:
		fmt.Fprintln(a.Out, declared(server, o.tools))
		a.printSecretsNeeded(d.Entry)
		fmt.Fprintln(a.Out, "next: `abox up` starts it in the gateway")
	}
	return nil
}

func declared(server string, tools []string) string {
	if len(tools) == 0 {
		return "declared " + server
	}
	return "declared " + server + " (tools: " + strings.Join(tools, ", ") + ")"
}

// printSecretsNeeded lists the secrets a server reads, which the gateway's secrets file holds.
func (a *App) printSecretsNeeded(e catalog.Entry) {
	for _, s := range e.Secrets {
		fmt.Fprintf(a.Out, "  needs secret %s (as %s): `abox secrets set %s`\n", s.Name, s.Env, s.Name)
	}
}

func newMCPRmCmd(a *App) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "rm SERVER",
		Short: "Undeclare a server, with its tools: and server_network: entries",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			server := args[0]
			p, err := a.loadProject(dir)
			if err != nil {
				return err
			}
			if err := edit.RemoveServer(c.Context(), p, a.editEnv(), server); err != nil {
				return remedy.MCP(remedy.Edit(err))
			}
			fmt.Fprintf(a.Out, "removed %s\n", server)
			fmt.Fprintln(a.Out, "next: `abox up` reconciles the gateway")
			return nil
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}

func newMCPOAuthCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "oauth [PROVIDER]",
		Short: "List or authorize OAuth apps for hosted servers (Docker Desktop)",
		Long: `OAuth lists the OAuth apps Docker Desktop holds for hosted MCP servers, or authorizes
PROVIDER (a browser opens). It needs Docker Desktop's MCP Toolkit: on Docker Engine there is
no OAuth broker, and remote servers take a token header from a secret instead.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runMCPOAuth(c.Context(), a, args) },
	}
}

func runMCPOAuth(ctx context.Context, a *App, args []string) error {
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	provider := ""
	if len(args) == 1 {
		provider = args[0]
	}
	err := gateway.OAuth(ctx, a.docker(), provider, a.TTY, a.Out, a.Err)
	var de *gateway.DesktopOnlyError
	if errors.As(err, &de) {
		return errorf("on Docker Engine, give the remote server a token header: `abox mcp add-remote NAME --url URL --header 'Authorization: Bearer ${TOKEN}' --secret NAME.token=TOKEN`",
			"abox mcp oauth needs Docker Desktop; this daemon runs on %s", de.OS)
	}
	return err
}
