package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/owner"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/termtext"
)

// project is a loaded project: its manifest, the global configuration and its state layout.
type project struct {
	ws       string // workspace, absolute
	manifest *manifest.Manifest
	raw      []byte // the manifest as read
	cfg      *config.Config
	custom   config.CustomServers
	paths    paths.Paths
	state    paths.Project
	// approvedHere is set once this command approved manifest (abox up): it is bound as it
	// is, not the approval recorded before.
	approvedHere bool
}

// loadConfig reads config.yaml and custom-servers.yaml.
func (a *App) loadConfig() (*config.Config, config.CustomServers, paths.Paths, error) {
	ps, err := a.Paths()
	if err != nil {
		return nil, nil, ps, err
	}
	cfg, err := config.Load(ps.ConfigFile())
	if err != nil {
		return nil, nil, ps, withHint(err, "fix "+ps.ConfigFile())
	}
	custom, err := config.LoadCustomServers(ps.CustomServersFile())
	if err != nil {
		return nil, nil, ps, withHint(err, "fix "+ps.CustomServersFile())
	}
	return cfg, custom, ps, nil
}

// loadProject finds the workspace at or above dir and loads everything a command needs.
func (a *App) loadProject(dir string) (*project, error) {
	ws, err := manifest.Find(dir)
	if errors.Is(err, manifest.ErrNotFound) {
		return nil, withHint(err, "run `abox init` in the project directory first")
	}
	if err != nil {
		return nil, err
	}
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	m, raw, err := manifest.Load(filepath.Join(ws, manifest.FileName))
	if err != nil {
		return nil, withHint(err, "edit agentbox.yaml, then run `abox render`")
	}
	if _, ok := cfg.Profiles[m.Profile]; !ok {
		return nil, errorf(fmt.Sprintf("add it under profiles: in %s, or set profile: to one of the known ones", ps.ConfigFile()),
			"agentbox.yaml: profile %q is not configured (known: %s)", m.Profile, strings.Join(cfg.ProfileNames(), ", "))
	}
	return &project{ws: ws, manifest: m, raw: raw, cfg: cfg, custom: custom, paths: ps, state: ps.Project(ws)}, nil
}

// lock takes the project's lock for a mutating command.
func (p *project) lock() (func(), error) {
	if err := statefs.MkdirAll(p.state.Dir); err != nil {
		return nil, err
	}
	return statefs.Lock(p.state.Lock())
}

// spec gathers everything rendering depends on. It reads the CA certificates' content (their
// hashes name the image) and, for an npm-installed Claude Code, the host's npm registry.
func (a *App) spec(p *project) (render.Spec, error) {
	home, _ := a.Env("HOME")
	s := render.Spec{
		Version: a.Version, Manifest: p.manifest, Config: p.cfg, Custom: p.custom,
		Paths: p.paths, Project: p.state, Home: home, NetdBinary: a.binarySHA256(),
		Resolvers: a.hostResolvers(),
	}
	id, err := agentIdentity(p)
	if err != nil {
		return s, err
	}
	s.Agent = id
	in, err := images.RenderInputs(context.Background(), p.cfg, home, a.probe())
	if err != nil {
		return s, err
	}
	s.CACerts, s.NPMRegistry = in.CACerts, in.NPMRegistry
	cat, err := catalog.Load(a.mcpHome(), p.custom)
	if err != nil {
		return s, err
	}
	s.Catalog = cat
	return s, nil
}

// agentIdentity is who the project's agent runs as: the workspace owner, or config.yaml's
// agent.uid/agent.gid.
func agentIdentity(p *project) (render.Identity, error) {
	id, err := owner.Resolve(p.state.Workspace, p.cfg.Agent, owner.StatOwner)
	var ro *owner.RootOwnedError
	if errors.As(err, &ro) {
		return id, withHint(err, fmt.Sprintf("chown the project to the user who works on it (`chown -R <user>: %s`), or set agent.uid and agent.gid in config.yaml", termtext.Line(ro.Workspace)))
	}
	return id, err
}

// binarySHA256 hashes the running abox binary once; it names the netd image built from it.
func (a *App) binarySHA256() string {
	if a.binarySum == "" && a.Executable != "" {
		a.binarySum, _ = images.FileSHA256(a.Executable)
	}
	return a.binarySum
}
