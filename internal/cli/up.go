package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/provision"
	"github.com/aboxhq/abox/internal/remedy"
)

type upOptions struct {
	dir          string
	noBuild      bool
	noCache      bool
	yes          bool
	forceGateway bool
}

func newUpCmd(a *App) *cobra.Command {
	var opts upOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Render, build the images, start the gateway and record the approved manifest",
		Long: `Up prepares everything a run needs: it renders the artifacts, creates the network and the
project's ~/.claude volume, builds the netd and agent images (reusing them when their inputs are
unchanged), reconciles the profile's gateway, and records the manifest as approved.

The manifest lives in the workspace, which the agent can write, so abox run refuses a manifest
changed since the last up. When the manifest widens what the sandbox may reach, up shows how and
asks first (--yes accepts without asking). Up is idempotent.

The first up also records the project's baseline of what runs outside the sandbox — the watched
files (CI, make, package scripts, editor tasks, .claude/, the manifest) and git's dangerous
settings and hooks — before any agent can have changed them; it lists the git settings and hooks
it found, for you to look at. Later ups leave the baseline alone: only abox doctor --accept-watch
and --accept-git change it, so running up again never accepts what a run changed.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runUp(c.Context(), a, opts) },
	}
	addDirFlag(cmd, &opts.dir)
	f := cmd.Flags()
	f.BoolVar(&opts.noBuild, "no-build", false, "do not build images")
	f.BoolVar(&opts.noCache, "no-cache", false, "rebuild images from scratch")
	f.BoolVarP(&opts.yes, "yes", "y", false, "accept a widened manifest without asking")
	f.BoolVar(&opts.forceGateway, "force-gateway", false, "recreate the profile's gateway")
	return cmd
}

func runUp(ctx context.Context, a *App, opts upOptions) error {
	p, err := a.loadProject(opts.dir)
	if err != nil {
		return err
	}
	rs, err := provision.Up(ctx, a.provisionEnv(p, opts.noCache), p,
		provision.UpOptions{Yes: opts.yes, NoBuild: opts.noBuild, ForceGateway: opts.forceGateway})
	if err != nil {
		return remedy.Provision(err, p.Manifest.Profile)
	}
	fmt.Fprintf(a.Out, "%s is up: images %s, %s; network %s\n", p.Manifest.Project, rs.Agent.Image, rs.Netd.Image, p.Config.Network)
	fmt.Fprintf(a.Out, "next: `abox shell` once to log Claude Code in, then `abox run \"<prompt>\"`\n")
	return nil
}

// confirm asks a yes/no question on the terminal; the default is no.
func (a *App) confirm(question string) bool {
	fmt.Fprintf(a.Err, "%s [y/N] ", question)
	line, _ := bufio.NewReader(a.In).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes"
}
