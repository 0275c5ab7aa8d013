package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/hostprobe"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

// buildOptions are the choices of `abox up` for images.
type buildOptions struct {
	noCache bool
}

// ensureAgentImage builds the project's agent image unless one with its tag exists.
func (a *App) ensureAgentImage(ctx context.Context, p *project.Project, rs *render.RunSpec, o buildOptions) error {
	return a.explainBuild(a.builder(o).Agent(ctx, projectImages(p), rs.Agent.Image))
}

// ensureNetdImage builds the netd image from the running abox binary unless an image with this
// tag already holds that binary.
func (a *App) ensureNetdImage(ctx context.Context, p *project.Project, rs *render.RunSpec, o buildOptions) error {
	return a.explainBuild(a.builder(o).Netd(ctx, projectImages(p), rs.Netd.Image, a.Executable, a.binarySHA256()))
}

// builder is the image builder of this App: progress lines on stderr, the live build line on
// a terminal.
func (a *App) builder(o buildOptions) *images.Builder {
	b := &images.Builder{Docker: a.docker(), Home: a.getenv("HOME"), Now: a.Now, Progress: a.progressf, NoCache: o.noCache}
	if a.TTY {
		b.Terminal = a.Err
	}
	return b
}

// projectImages is what an image build takes from the project.
func projectImages(p *project.Project) images.Project {
	return images.Project{Name: p.Manifest.Project, Config: p.Config, Paths: p.Paths, State: p.State}
}

// explainBuild maps an error of [images.Builder]: a refused input is a boundary refusal (exit
// 3); a failed build shows its log and names the fix.
func (a *App) explainBuild(err error) error {
	var ie *images.Error
	var be *images.BuildError
	switch {
	case errors.As(err, &ie) && ie.Refused:
		return boundary(err)
	case errors.As(err, &be):
		fmt.Fprintf(a.Err, "--- build log of %s ---\n%s--- end of build log ---\n", be.Tag, be.Log)
		return withHint(err, "fix the cause above; re-run `abox up` (add --no-cache to rebuild from scratch)")
	}
	return err
}

// probe is the host's tools: App.Probe, or the real ones.
func (a *App) probe() hostprobe.Probe {
	if a.Probe != nil {
		return a.Probe
	}
	return hostprobe.System{}
}
