package cli

import (
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

// probe is the host's tools: App.Probe, or the real ones.
func (a *App) probe() hostprobe.Probe {
	if a.Probe != nil {
		return a.Probe
	}
	return hostprobe.System{}
}
