package cli

import (
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/hostprobe"
	"github.com/aboxhq/abox/internal/images"
)

// builder is the image builder of this App: progress lines on stderr, the live build line on
// a terminal. noCache is `abox up --no-cache`.
func (a *App) builder(noCache bool) *images.Builder {
	b := &images.Builder{Docker: a.docker(), Home: a.getenv("HOME"), Now: a.Now, Progress: a.progressf, NoCache: noCache}
	if a.TTY {
		b.Terminal = a.Err
	}
	return b
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
