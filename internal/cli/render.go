package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
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
	unlock, err := p.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	arts, err := a.renderProject(p, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "rendered %d artifacts for %s\n", render.Authoritative(arts), p.Manifest.Project)
	fmt.Fprintf(a.Out, "  artifacts: %s\n", p.State.Artifacts())
	fmt.Fprintf(a.Out, "  review copy: %s\n", filepath.Join(p.Workspace, render.ReviewDir))
	return nil
}

// renderProject renders and writes the project's artifacts and prints any warnings.
//
// approved is set by `abox up`, which has just approved p.Manifest: it is bound as it is, not
// with the approval recorded before.
func (a *App) renderProject(p *project.Project, approved bool) ([]render.Artifact, error) {
	spec, err := a.spec(p)
	if err != nil {
		return nil, err
	}
	arts, err := render.Render(spec)
	if err != nil {
		return nil, withHint(err, "fix the manifest or config.yaml, then run `abox render`")
	}
	warnings, err := artifact.Write(p.State, arts)
	if err != nil {
		return nil, err
	}
	if err := a.bindProject(p, approved); err != nil {
		return nil, err
	}
	for _, w := range warnings {
		a.warnf("", "%s", w)
	}
	for _, path := range sandbox.MissingContext(p.Manifest, spec.Home) {
		a.warnf("create it, or remove it from mounts.context", "context directory %s does not exist; runs will fail until it does", path)
	}
	return arts, nil
}
