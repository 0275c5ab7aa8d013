package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/setup"
	"github.com/aboxhq/abox/internal/setup/pick"
)

type initOptions struct {
	dir                          string
	args                         manifest.InitArgs // the manifest's values and the credential
	yes, interactive, accessible bool
}

func newInitCmd(a *App) *cobra.Command {
	var opts initOptions
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write agentbox.yaml for a project (interactive picker on a terminal) and render it",
		Long: `Init writes the project's agentbox.yaml and renders its artifacts. On a terminal it asks
for the profile, MCP servers (with their secret needs and optional tool narrowing), toolchains
(pre-ticked from marker files), egress (pre-ticked from the toolchains and git remotes, plus free
text), context directories, the permission mode and how Claude Code gets its credential, then
shows a summary to confirm.

The credential is config.yaml's, for every project: the login volume (a claude.ai subscription;
run ` + "`abox shell`" + ` once to log in), or a credential netd injects (an API key, or the token
` + "`claude setup-token`" + ` prints, stored with ` + "`abox secrets set <name>`" + `; the agent never
holds it). Init never asks for the credential itself.

With --yes, or without a terminal, it uses the flags, the existing manifest and what it detects.
Re-running merges: fields you set are kept, and flags add to them.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runInit(c.Context(), a, opts) },
	}
	f := cmd.Flags()
	f.StringVarP(&opts.dir, "dir", "C", ".", "the project directory (created if missing)")
	f.StringVar(&opts.args.Project, "project", "", "project name (default: the existing one, else the directory name)")
	f.StringVar(&opts.args.Profile, "profile", "", "gateway profile (default: the existing one, else default)")
	f.StringArrayVar(&opts.args.Servers, "server", nil, "declare an MCP server (repeatable)")
	f.StringArrayVar(&opts.args.Egress, "egress", nil, "allow a host: example.com, *.example.com or host:port (repeatable)")
	f.StringArrayVar(&opts.args.Toolchains, "toolchain", nil, "add a toolchain: "+strings.Join(manifest.Installable(), ", ")+" (repeatable)")
	f.StringArrayVar(&opts.args.Masks, "mask", nil, "mask a workspace path or glob (repeatable)")
	f.StringVar(&opts.args.PermissionMode, "permission-mode", "", "Claude Code permission mode: "+strings.Join(manifest.PermissionModes, ", "))
	f.StringVar(&opts.args.Credential, "credential", "", "have netd inject the Claude credential stored as this secret (`abox secrets set NAME`); sets config.yaml's claude_code.credential")
	f.BoolVarP(&opts.yes, "yes", "y", false, "do not ask; use flags, the existing manifest and detection")
	f.BoolVar(&opts.interactive, "interactive", false, "ask even without a terminal (with --accessible, answers are read line by line)")
	f.BoolVar(&opts.accessible, "accessible", false, "plain-text prompts for screen readers and scripted input")
	return cmd
}

func runInit(ctx context.Context, a *App, opts initOptions) error {
	args := opts.args
	if err := manifest.CheckInitArgs("abox init", args); err != nil {
		return err
	}
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return err
	}
	st, err := setup.Load(ctx, setup.Env{Config: cfg, Custom: custom, ConfigFile: ps.ConfigFile(), MCPHome: a.mcpHome(), Probe: a.probe()}, opts.dir)
	if errors.Is(err, setup.ErrExisting) {
		return withHint(err, "fix agentbox.yaml by hand (init keeps it and merges into it)")
	}
	if err != nil {
		return err
	}
	for _, t := range st.LeftOut {
		r := manifest.Uninstallable[t]
		a.warnf(r.Hint, "this looks like a %s project, which init leaves out of toolchains: %s", t, r.Why)
	}
	ans := st.Defaults(args)
	if err := st.CheckServers(ans.Servers); err != nil { // a *setup.UnknownServersError
		return withHint(err, "list known servers with `abox mcp list --all`, or define it in custom-servers.yaml")
	}
	if !opts.yes && (a.TTY || opts.interactive) {
		ans, err = a.pickInit(ctx, st, ans, opts.accessible || !a.TTY)
		if err != nil {
			return err
		}
	}
	return a.writeInit(st, ans, ps)
}

// pickInit asks for every answer, starting from ans ([pick.Run]). Accessible prompts are
// init's output, on stdout; the terminal form draws on stderr.
func (a *App) pickInit(ctx context.Context, st *setup.State, ans setup.Answers, accessible bool) (setup.Answers, error) {
	out := a.Err
	if accessible {
		out = a.Out
	}
	return pick.Run(ctx, st, ans, pick.Options{In: a.In, Out: out, Accessible: accessible, Home: a.getenv("HOME")})
}

// writeInit writes what the answers make ([setup.State.Write]) and reports it.
func (a *App) writeInit(st *setup.State, ans setup.Answers, ps paths.Paths) error {
	rep, err := st.Write(ans, ps, setup.Hooks{
		Spec:     a.spec,
		Render:   func(p *project.Project) error { _, err := a.renderProject(p, false); return err },
		Progress: a.progressf,
	})
	switch {
	case errors.Is(err, setup.ErrAnswers):
		return withHint(err, "fix the values given to `abox init`")
	case errors.Is(err, setup.ErrRender):
		return withHint(err, "fix config.yaml, then run `abox init` again")
	case err != nil:
		return err
	}
	rep.WriteText(a.Out)
	if rep.CredentialErr != nil {
		a.warnf("keep it a regular file of mode 0600: `abox secrets set "+rep.Credential+"` rewrites it", "the Claude credential cannot be handed to netd: %v", rep.CredentialErr)
	}
	return nil
}

// mcpHome is where the Docker MCP Toolkit keeps its catalogs.
func (a *App) mcpHome() string {
	if v := a.getenv("ABOX_DOCKER_MCP_HOME"); v != "" {
		return v
	}
	return filepath.Join(a.getenv("HOME"), ".docker", "mcp")
}
