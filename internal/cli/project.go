package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/termtext"
)

// loadConfig reads config.yaml and custom-servers.yaml ([project.LoadConfig]).
func (a *App) loadConfig() (*config.Config, config.CustomServers, paths.Paths, error) {
	ps, err := a.Paths()
	if err != nil {
		return nil, nil, ps, err
	}
	cfg, custom, err := project.LoadConfig(ps)
	return cfg, custom, ps, explainLoad(err)
}

// loadProject finds the workspace at or above dir and loads everything a command needs
// ([project.Load]).
func (a *App) loadProject(dir string) (*project.Project, error) {
	ws, err := manifest.Find(dir)
	if err != nil {
		return nil, explainLoad(err)
	}
	ps, err := a.Paths()
	if err != nil {
		return nil, err
	}
	p, err := project.Load(ws, ps)
	return p, explainLoad(err)
}

// explainLoad names the fix of an error of [project.Load].
func explainLoad(err error) error {
	var ce *project.ConfigError
	var me *project.ManifestError
	var pe *project.ProfileError
	switch {
	case errors.Is(err, manifest.ErrNotFound):
		return withHint(err, "run `abox init` in the project directory first")
	case errors.As(err, &ce):
		return withHint(err, "fix "+ce.File)
	case errors.As(err, &me):
		return withHint(err, "edit agentbox.yaml, then run `abox render`")
	case errors.As(err, &pe):
		return withHint(err, fmt.Sprintf("add it under profiles: in %s, or set profile: to one of the known ones", pe.ConfigFile))
	}
	return err
}

// spec gathers everything rendering depends on ([project.Project.Spec]).
func (a *App) spec(p *project.Project) (render.Spec, error) {
	home, _ := a.Env("HOME")
	s, err := p.Spec(context.Background(), project.Host{
		Version: a.Version, Home: home, NetdBinary: a.binarySHA256(), Resolvers: a.hostResolvers(),
		Probe: a.probe(), MCPHome: a.mcpHome(),
	})
	return s, explainIdentity(err)
}

func explainIdentity(err error) error {
	var ro *owner.RootOwnedError
	if errors.As(err, &ro) {
		return withHint(err, fmt.Sprintf("chown the project to the user who works on it (`chown -R <user>: %s`), or set agent.uid and agent.gid in config.yaml", termtext.Line(ro.Workspace)))
	}
	return err
}

// binarySHA256 hashes the running abox binary once; it names the netd image built from it.
func (a *App) binarySHA256() string {
	if a.binarySum == "" && a.Executable != "" {
		a.binarySum, _ = images.FileSHA256(a.Executable)
	}
	return a.binarySum
}
