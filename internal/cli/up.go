package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/sandbox"
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
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	unlock, err := p.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := a.approve(p, opts.yes); err != nil {
		return err
	}
	if _, err := a.renderProject(p, true); err != nil {
		return err
	}
	rs, err := artifact.ReadRunSpec(p.State)
	if err != nil {
		return err
	}
	if err := a.ensureNetwork(ctx, p.Config.Network); err != nil {
		return err
	}
	existed, err := sandbox.CreateClaudeVolume(ctx, a.docker(), rs, map[string]string{
		"abox.managed": "true", "abox.project": p.Manifest.Project, "abox.hash": p.State.Hash,
	})
	if err != nil {
		return err
	}
	if !opts.noBuild {
		// The agent image first: its Claude Code download is what most often needs the network,
		// and its error names the host.
		bo := buildOptions{noCache: opts.noCache}
		if err := a.ensureAgentImage(ctx, p, rs, bo); err != nil {
			return err
		}
		if err := a.ensureNetdImage(ctx, p, rs, bo); err != nil {
			return err
		}
	}
	if err := a.ensureClaudeVolume(ctx, p, rs, existed); err != nil {
		return err
	}
	if err := a.upGateway(ctx, p, opts.forceGateway); err != nil {
		return err
	}
	if err := a.recordBaseline(p, rs); err != nil {
		return err
	}
	if err := approval.Record(p.State, p.Raw); err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "%s is up: images %s, %s; network %s\n", p.Manifest.Project, rs.Agent.Image, rs.Netd.Image, p.Config.Network)
	fmt.Fprintf(a.Out, "next: `abox shell` once to log Claude Code in, then `abox run \"<prompt>\"`\n")
	return nil
}

// ensureNetwork creates the bridge network abox's containers share, if missing.
func (a *App) ensureNetwork(ctx context.Context, name string) error {
	return a.docker().EnsureNetwork(ctx, name, map[string]string{"abox.managed": "true"})
}

// approve compares the manifest with the one approved by the last up. A widening change is shown
// and, unless yes, confirmed on a terminal; without a terminal it is refused.
//
// A corrupt approval leaves nothing to compare with, so replacing it is asked like a widening,
// and refused without a terminal or --yes (exit 3): it is never replaced silently.
func (a *App) approve(p *project.Project, yes bool) error {
	rv, err := approval.ReviewOf(p.State, p.Manifest)
	switch {
	case err != nil:
		return err
	case rv.Corrupt != nil:
		return a.replaceCorrupt(rv.Corrupt, yes)
	case len(rv.Widening) == 0 || yes:
		return nil // the first up approves the manifest as written
	}
	widen := rv.Widening
	fmt.Fprintf(a.Err, "agentbox.yaml reaches further than the manifest approved at the last `abox up`:\n")
	for _, l := range widen {
		linef(a.Err, "  %s", l)
	}
	if !a.TTY {
		return errorf("review the change, then run `abox up --yes` to approve it", "the widened manifest was not approved")
	}
	if !a.confirm("approve it?") {
		return errorf("edit agentbox.yaml, or run `abox up` again to approve", "not approved; nothing was changed")
	}
	return nil
}

// replaceCorrupt says that the corrupt approval (corrupt, a [*approval.CorruptError]) will be
// replaced with agentbox.yaml as written, and asks as [App.approve] does for a widening.
func (a *App) replaceCorrupt(corrupt error, yes bool) error {
	linef(a.Err, "%v", corrupt)
	fmt.Fprintf(a.Err, "approving replaces it with agentbox.yaml as written\n")
	switch {
	case yes:
		return nil
	case !a.TTY:
		return withHint(fmt.Errorf("the approved manifest was not replaced: %w", corrupt),
			"review agentbox.yaml, then run `abox up --yes` to approve it as written")
	case !a.confirm("approve it?"):
		return errorf("edit agentbox.yaml, or run `abox up` again to approve", "not approved; nothing was changed")
	}
	return nil
}

// confirm asks a yes/no question on the terminal; the default is no.
func (a *App) confirm(question string) bool {
	fmt.Fprintf(a.Err, "%s [y/N] ", question)
	line, _ := bufio.NewReader(a.In).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes"
}

// upGateway binds the project, which `abox up` has just approved, and reconciles its profile's
// gateway when it declares a server.
func (a *App) upGateway(ctx context.Context, p *project.Project, force bool) error {
	if err := a.bindProject(p, true); err != nil {
		return err
	}
	if len(p.Manifest.DeclaredServers()) == 0 {
		return nil
	}
	return a.reconcileGateway(ctx, p.Manifest.Profile, force, artifact.NetdImage(p.State))
}
