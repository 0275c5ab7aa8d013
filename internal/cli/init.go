package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
)

type initOptions struct {
	dir, project, profile, permissionMode string
	servers, egress, toolchains, masks    []string
	yes, interactive, accessible          bool
}

func newInitCmd(a *App) *cobra.Command {
	var opts initOptions
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write agentbox.yaml for a project (interactive picker on a terminal) and render it",
		Long: `Init writes the project's agentbox.yaml and renders its artifacts. On a terminal it asks
for the profile, MCP servers (with their secret needs and optional tool narrowing), toolchains
(pre-ticked from marker files), egress (pre-ticked from the toolchains and git remotes, plus free
text), context directories and the permission mode, then shows a summary to confirm.

With --yes, or without a terminal, it uses the flags, the existing manifest and what it detects.
Re-running merges: fields you set are kept, and flags add to them.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runInit(c.Context(), a, opts) },
	}
	f := cmd.Flags()
	f.StringVarP(&opts.dir, "dir", "C", ".", "the project directory (created if missing)")
	f.StringVar(&opts.project, "project", "", "project name (default: the existing one, else the directory name)")
	f.StringVar(&opts.profile, "profile", "", "gateway profile (default: the existing one, else default)")
	f.StringArrayVar(&opts.servers, "server", nil, "declare an MCP server (repeatable)")
	f.StringArrayVar(&opts.egress, "egress", nil, "allow a host: example.com, *.example.com or host:port (repeatable)")
	f.StringArrayVar(&opts.toolchains, "toolchain", nil, "add a toolchain: "+strings.Join(manifest.Installable(), ", ")+" (repeatable)")
	f.StringArrayVar(&opts.masks, "mask", nil, "mask a workspace path or glob (repeatable)")
	f.StringVar(&opts.permissionMode, "permission-mode", "", "Claude Code permission mode: "+strings.Join(manifest.PermissionModes, ", "))
	f.BoolVarP(&opts.yes, "yes", "y", false, "do not ask; use flags, the existing manifest and detection")
	f.BoolVar(&opts.interactive, "interactive", false, "ask even without a terminal (with --accessible, answers are read line by line)")
	f.BoolVar(&opts.accessible, "accessible", false, "plain-text prompts for screen readers and scripted input")
	return cmd
}

// initState is what init starts from: configuration, any existing manifest, and detection.
type initState struct {
	ws         string
	cfg        *config.Config
	cfgExists  bool
	custom     config.CustomServers
	cat        *catalog.Catalog
	doc        *manifest.Doc      // nil for a new manifest
	existing   *manifest.Manifest // nil for a new manifest
	toolchains []string           // detected
	suggested  map[string][]string
	remotes    []string
}

func runInit(ctx context.Context, a *App, opts initOptions) error {
	if err := checkInitFlags(opts); err != nil {
		return err
	}
	// Hosts are written as the allowlist reads them: "Example.COM." becomes "example.com".
	opts.egress = slices.Clone(opts.egress)
	for i, h := range opts.egress {
		opts.egress[i] = manifest.Canon(h)
	}
	st, err := a.initState(opts.dir)
	if err != nil {
		return err
	}
	ans := st.defaults(opts)
	if err := st.checkServers(ans.servers); err != nil {
		return err
	}
	if !opts.yes && (a.TTY || opts.interactive) {
		ans, err = a.pickInit(ctx, st, ans, opts.accessible || !a.TTY)
		if err != nil {
			return err
		}
	}
	return a.writeInit(st, ans)
}

// checkInitFlags validates every flag value before anything is read or written
// ([manifest.CheckInitArgs]).
func checkInitFlags(o initOptions) error {
	return manifest.CheckInitArgs("abox init", manifest.InitArgs{
		Project: o.project, Profile: o.profile, PermissionMode: o.permissionMode,
		Servers: o.servers, Egress: o.egress, Toolchains: o.toolchains, Masks: o.masks,
	})
}

func (a *App) initState(dir string) (*initState, error) {
	ws, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	st := &initState{ws: ws, cfg: cfg, custom: custom}
	_, statErr := os.Stat(ps.ConfigFile())
	st.cfgExists = statErr == nil
	if st.cat, err = catalog.Load(a.mcpHome(), custom); err != nil {
		return nil, err
	}
	if err := st.readExisting(); err != nil {
		return nil, err
	}
	st.toolchains, st.remotes = detectWorkspace(ws)
	st.toolchains = a.dropUninstallable(st.toolchains)
	st.suggested = a.suggestEgress(manifest.Toolchains)
	return st, nil
}

// dropUninstallable removes from the detected toolchains those abox cannot install, with a
// warning that says what to do instead: detection recognises a .NET project, but proposing
// dotnet would only make the render refuse the manifest init just wrote.
func (a *App) dropUninstallable(detected []string) []string {
	return slices.DeleteFunc(detected, func(t string) bool {
		r, ok := manifest.Uninstallable[t]
		if ok {
			a.warnf(r.Hint, "this looks like a %s project, which init leaves out of toolchains: %s", t, r.Why)
		}
		return ok
	})
}

// readExisting loads the manifest already in the workspace, if any. An invalid one stops init:
// it would otherwise be overwritten.
func (st *initState) readExisting() error {
	data, err := manifest.ReadFile(filepath.Join(st.ws, manifest.FileName))
	if errors.Is(err, manifest.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.doc, err = manifest.ParseDoc(data, manifest.FileName); err != nil {
		return withHint(err, "fix agentbox.yaml by hand (init keeps it and merges into it)")
	}
	if st.existing, err = st.doc.Manifest(manifest.FileName); err != nil {
		return withHint(err, "fix agentbox.yaml by hand (init keeps it and merges into it)")
	}
	return nil
}

// checkServers refuses names neither the catalog nor custom-servers.yaml knows.
func (st *initState) checkServers(servers []string) error {
	unknown := st.cat.Unknown(servers)
	if len(unknown) == 0 {
		return nil
	}
	return errorf("list known servers with `abox mcp list --all`, or define it in custom-servers.yaml",
		"unknown MCP server %s", strings.Join(quoteAll(unknown), ", "))
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// mcpHome is where the Docker MCP Toolkit keeps its catalogs.
func (a *App) mcpHome() string {
	if v := a.getenv("ABOX_DOCKER_MCP_HOME"); v != "" {
		return v
	}
	return filepath.Join(a.getenv("HOME"), ".docker", "mcp")
}

// writeConfig writes config.yaml: cfg when there is none, so users have a file to edit, and
// otherwise adds the profile init made up (none when profile is ""), keeping the rest of the
// file as the user wrote it.
func (a *App) writeConfig(cfg *config.Config, profile string) error {
	ps, err := a.Paths()
	if err != nil {
		return err
	}
	_, err = config.EditFile(ps.ConfigFile(), cfg, func(d *config.Doc) error {
		if profile == "" {
			return nil
		}
		return d.SetProfile(profile, cfg.Profiles[profile])
	})
	return err
}
