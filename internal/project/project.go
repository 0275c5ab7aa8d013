package project

import (
	"context"
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
)

// Project is a loaded project: its manifest, the global configuration and its state layout.
type Project struct {
	Workspace string // absolute
	Manifest  *manifest.Manifest
	Raw       []byte // the manifest as read
	Config    *config.Config
	Custom    config.CustomServers
	Paths     paths.Paths
	State     paths.Project
}

// ConfigError is a config.yaml or custom-servers.yaml (File) that does not load.
type ConfigError struct {
	File string
	Err  error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ManifestError is an agentbox.yaml that does not load.
type ManifestError struct{ Err error }

func (e *ManifestError) Error() string { return e.Err.Error() }
func (e *ManifestError) Unwrap() error { return e.Err }

// ProfileError is a manifest whose profile config.yaml (ConfigFile) does not configure.
type ProfileError struct {
	Profile    string
	Known      []string
	ConfigFile string
}

func (e *ProfileError) Error() string {
	return fmt.Sprintf("agentbox.yaml: profile %q is not configured (known: %s)", e.Profile, strings.Join(e.Known, ", "))
}

// LoadConfig reads config.yaml and custom-servers.yaml; either failing is a [*ConfigError].
func LoadConfig(ps paths.Paths) (*config.Config, config.CustomServers, error) {
	cfg, err := config.Load(ps.ConfigFile())
	if err != nil {
		return nil, nil, &ConfigError{File: ps.ConfigFile(), Err: err}
	}
	custom, err := config.LoadCustomServers(ps.CustomServersFile())
	if err != nil {
		return nil, nil, &ConfigError{File: ps.CustomServersFile(), Err: err}
	}
	return cfg, custom, nil
}

// Load loads everything a command needs of the project in workspace ws (as [manifest.Find]
// found it). A configuration that does not load is a [*ConfigError], a manifest a
// [*ManifestError], and one whose profile is not configured a [*ProfileError].
func Load(ws string, ps paths.Paths) (*Project, error) {
	cfg, custom, err := LoadConfig(ps)
	if err != nil {
		return nil, err
	}
	m, raw, err := manifest.Load(filepath.Join(ws, manifest.FileName))
	if err != nil {
		return nil, &ManifestError{Err: err}
	}
	if _, ok := cfg.Profiles[m.Profile]; !ok {
		return nil, &ProfileError{Profile: m.Profile, Known: cfg.ProfileNames(), ConfigFile: ps.ConfigFile()}
	}
	return &Project{Workspace: ws, Manifest: m, Raw: raw, Config: cfg, Custom: custom, Paths: ps, State: ps.Project(ws)}, nil
}

// Lock takes the project's lock for a mutating command.
func (p *Project) Lock() (func(), error) {
	if err := statefs.MkdirAll(p.State.Dir); err != nil {
		return nil, err
	}
	return statefs.Lock(p.State.Lock())
}

// Identity is who the project's agent runs as: the workspace owner, or config.yaml's
// agent.uid/agent.gid. A workspace owned by root is an [*owner.RootOwnedError].
func (p *Project) Identity() (render.Identity, error) {
	return owner.Resolve(p.State.Workspace, p.Config.Agent, owner.StatOwner)
}

// Images is what an image build takes from the project.
func (p *Project) Images() images.Project {
	return images.Project{Name: p.Manifest.Project, Config: p.Config, Paths: p.Paths, State: p.State}
}

// Host is what a spec takes from the machine rather than the project.
type Host struct {
	Version    string       // abox's
	Home       string       // $HOME, for ~ in config paths
	NetdBinary string       // sha256 of the abox binary the netd image is built from
	Resolvers  []string     // the host's DNS servers, for netd
	Probe      images.Probe // the host's npm and go, asked how they are configured
	MCPHome    string       // the Docker MCP Toolkit's directory, for the catalogs
}

// Spec gathers everything rendering depends on. It reads the CA certificates' content (their
// hashes name the image), for an npm-installed Claude Code the host's npm registry, and the
// catalogs.
func (p *Project) Spec(ctx context.Context, h Host) (render.Spec, error) {
	s := render.Spec{
		Version: h.Version, Manifest: p.Manifest, Config: p.Config, Custom: p.Custom,
		Paths: p.Paths, Project: p.State, Home: h.Home, NetdBinary: h.NetdBinary,
		Resolvers: h.Resolvers,
	}
	id, err := p.Identity()
	if err != nil {
		return s, err
	}
	s.Agent = id
	in, err := images.RenderInputs(ctx, p.Config, h.Home, h.Probe)
	if err != nil {
		return s, err
	}
	s.CACerts, s.NPMRegistry = in.CACerts, in.NPMRegistry
	cat, err := catalog.Load(h.MCPHome, p.Custom)
	if err != nil {
		return s, err
	}
	s.Catalog = cat
	return s, nil
}
