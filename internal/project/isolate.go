package project

import (
	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/render"
)

// Isolated is the project's isolated runs, reviewed with its watched patterns: config.yaml's
// defaults.watch and the manifest's mounts.watch, which `abox diff` lists first and the end of
// a run flags.
func (p *Project) Isolated() *isolate.Repo {
	return &isolate.Repo{Project: p.State, Watch: render.Watched(p.Config, p.Manifest)}
}
