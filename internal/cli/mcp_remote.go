package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/edit"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/remedy"
)

type mcpAddRemoteOptions struct {
	dir, url, transport, description string
	headers, secrets                 []string
}

func newMCPAddRemoteCmd(a *App) *cobra.Command {
	var opts mcpAddRemoteOptions
	cmd := &cobra.Command{
		Use:   "add-remote NAME",
		Short: "Declare an internet-hosted MCP server, proxied by the gateway",
		Long: `Add-remote declares a remote MCP server (https only), replacing any of that name. The
gateway connects to it; the agent reaches its tools through netd like any other server's, and
the host is not added to the agent's egress allowlist.

A header value may name a secret's variable, never hold a credential itself:

  abox mcp add-remote docs --url https://mcp.example.com/mcp \
    --header 'Authorization: Bearer ${DOCS_TOKEN}' --secret docs.token=DOCS_TOKEN`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := opts.remote()
			if err != nil {
				return err
			}
			p, err := a.loadProject(opts.dir)
			if err != nil {
				return err
			}
			name := args[0]
			if err := edit.SetRemote(c.Context(), p, a.editEnv(), name, r); err != nil {
				return remedy.Edit(err)
			}
			fmt.Fprintf(a.Out, "declared remote server %s (%s, %s)\n", name, r.URL, r.Transport)
			for _, s := range r.Secrets {
				fmt.Fprintf(a.Out, "  needs secret %s (as %s): `abox secrets set %s`\n", s.Name, s.Env, s.Name)
			}
			fmt.Fprintln(a.Out, "next: `abox up` adds it to the gateway")
			return nil
		},
	}
	addDirFlag(cmd, &opts.dir)
	f := cmd.Flags()
	f.StringVar(&opts.url, "url", "", "the server's https URL (required)")
	f.StringVar(&opts.transport, "transport", manifest.DefaultTransport, "streamable-http or sse")
	f.StringArrayVar(&opts.headers, "header", nil, "a header 'Name: value'; the value may use ${VAR} of a --secret (repeatable)")
	f.StringArrayVar(&opts.secrets, "secret", nil, "a secret as name=ENV, for ${ENV} in headers (repeatable)")
	f.StringVar(&opts.description, "description", "", "what the server is for")
	_ = cmd.MarkFlagRequired("url")
	return cmd
}

// remote parses the flags ([manifest.ParseRemoteArgs]).
func (o mcpAddRemoteOptions) remote() (manifest.RemoteServer, error) {
	r := manifest.RemoteServer{URL: o.url, Transport: o.transport, Description: o.description}
	return manifest.ParseRemoteArgs("abox mcp add-remote", r, o.headers, o.secrets)
}

func newMCPRmRemoteCmd(a *App) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "rm-remote NAME",
		Short: "Undeclare a remote server, with its tools: entry",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			p, err := a.loadProject(dir)
			if err != nil {
				return err
			}
			if err := edit.RemoveRemote(c.Context(), p, a.editEnv(), name); err != nil {
				return remedy.MCP(remedy.Edit(err))
			}
			fmt.Fprintf(a.Out, "removed remote server %s\n", name)
			fmt.Fprintln(a.Out, "next: `abox up` reconciles the gateway")
			return nil
		},
	}
	addDirFlag(cmd, &dir)
	return cmd
}
