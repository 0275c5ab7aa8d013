package cli

import (
	"context"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/render"
)

// loadConfig reads config.yaml and custom-servers.yaml ([project.LoadConfig]).
func (a *App) loadConfig() (*config.Config, config.CustomServers, paths.Paths, error) {
	ps, err := a.Paths()
	if err != nil {
		return nil, nil, ps, err
	}
	cfg, custom, err := project.LoadConfig(ps)
	return cfg, custom, ps, remedy.Load(err)
}

// loadProject finds the workspace at or above dir and loads everything a command needs
// ([project.Load]).
func (a *App) loadProject(dir string) (*project.Project, error) {
	ws, err := manifest.Find(dir)
	if err != nil {
		return nil, remedy.Load(err)
	}
	ps, err := a.Paths()
	if err != nil {
		return nil, err
	}
	p, err := project.Load(ws, ps)
	return p, remedy.Load(err)
}

// spec gathers everything rendering depends on ([project.Project.Spec]).
func (a *App) spec(p *project.Project) (render.Spec, error) {
	home, _ := a.Env("HOME")
	s, err := p.Spec(context.Background(), project.Host{
		Version: a.Version, Home: home, NetdBinary: a.binarySHA256(), Resolvers: a.hostResolvers(),
		Probe: a.probe(), MCPHome: a.mcpHome(),
	})
	return s, remedy.Identity(err)
}

// binarySHA256 hashes the running abox binary once; it names the netd image built from it.
func (a *App) binarySHA256() string {
	if a.binarySum == "" && a.Executable != "" {
		a.binarySum, _ = images.FileSHA256(a.Executable)
	}
	return a.binarySum
}
