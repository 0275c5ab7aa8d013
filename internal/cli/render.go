package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/provision"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/render"
)

type renderOptions struct{ dir string }

func newRenderCmd(a *App) *cobra.Command {
	var opts renderOptions
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Re-render the sandbox's artifacts from the manifest, without building or running",
		Long: `Render writes every artifact that defines the project's sandbox into abox's state
directory (runspec.json, the Dockerfiles, netpolicy.nft, netd.json, mcp.json, settings.json, the
catalog entries and artifacts.json) and a review copy into .devcontainer/. Rendering is
deterministic: the same manifest and configuration give byte-identical files.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runRender(c.Context(), a, opts) },
	}
	addDirFlag(cmd, &opts.dir)
	return cmd
}

func runRender(_ context.Context, a *App, opts renderOptions) error {
	p, err := a.loadProject(opts.dir)
	if err != nil {
		return err
	}
	arts, err := provision.Render(a.provisionEnv(p, false), p)
	if err != nil {
		return remedy.Provision(err, p.Manifest.Profile)
	}
	fmt.Fprintf(a.Out, "rendered %d artifacts for %s\n", render.Authoritative(arts), p.Manifest.Project)
	fmt.Fprintf(a.Out, "  artifacts: %s\n", p.State.Artifacts())
	fmt.Fprintf(a.Out, "  review copy: %s\n", filepath.Join(p.Workspace, render.ReviewDir))
	return nil
}

// renderProject renders and writes the project's artifacts and prints any warnings
// ([provision.RenderLocked]); the caller holds the project's lock.
//
// approved is set by `abox up`, which has just approved p.Manifest: it is bound as it is, not
// with the approval recorded before.
func (a *App) renderProject(p *project.Project, approved bool) ([]render.Artifact, error) {
	arts, err := provision.RenderLocked(a.provisionEnv(p, false), p, approved)
	return arts, remedy.Provision(err, p.Manifest.Profile)
}
