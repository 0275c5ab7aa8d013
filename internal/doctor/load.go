package doctor

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

// Host is what [Load] and [BoundaryFailures] take of the machine beyond the workspace.
type Host struct {
	Docker       *docker.Client               // nil: as if the daemon were unreachable
	LookPath     func(string) (string, error) // finds an executable on PATH
	Paths        paths.Paths
	Home         string // the host home directory
	MCPHome      string // the Docker MCP Toolkit's directory, for the catalogs
	Now          func() time.Time
	Progress     io.Writer // progress of live probes; nil for none
	BinarySHA256 string    // the running abox binary's, which the netd image must hold
	// Spec builds the render spec of a loaded project as `abox render` does
	// ([project.Project.Spec] with the host's facts), for artifacts.current.
	Spec func(*project.Project) (render.Spec, error)
	// Warden starts the warden of --probe's sandbox, as of a run's ([sandbox.ProcessWarden]).
	Warden sandbox.WardenFunc
}

// Load gathers what doctor looks at in workspace ws. It needs only the workspace: a
// configuration, manifest or catalog that does not load is kept as its error, for the checks
// that report it (manifest.schema first), never returned. The flags' fields (AcceptGit, Quick,
// SecretSources) are left to the caller.
func Load(ws string, h Host) *Env {
	env := &Env{
		Docker: h.Docker, LookPath: h.LookPath, Paths: h.Paths, Project: h.Paths.Project(ws),
		Home: h.Home, Now: h.Now, Progress: h.Progress, BinarySHA256: h.BinarySHA256, Warden: h.Warden,
	}
	cfg, custom, cfgErr := project.LoadConfig(h.Paths)
	env.Config, env.ConfigErr = cfg, cfgErr
	m, raw, mErr := manifest.Load(filepath.Join(ws, manifest.FileName))
	env.Manifest, env.ManifestRaw, env.ManifestErr = m, raw, mErr
	if cfgErr != nil {
		return env
	}
	env.Catalog, env.CatalogErr = catalog.Load(h.MCPHome, custom)
	if m != nil {
		if _, ok := cfg.Profiles[m.Profile]; ok {
			env.setRender(h, &project.Project{Workspace: ws, Manifest: m, Raw: raw, Config: cfg, Custom: custom, Paths: h.Paths, State: env.Project})
		}
	}
	return env
}

// setRender lets artifacts.current render p as `abox render` would.
func (e *Env) setRender(h Host, p *project.Project) {
	if h.Spec == nil {
		return
	}
	e.Render = func() ([]render.Artifact, error) {
		spec, err := h.Spec(p)
		if err != nil {
			return nil, err
		}
		return render.Render(spec)
	}
}

// BoundaryFailures runs the boundary checks on the loaded project p and returns those that
// fail: `abox run` refuses bypassPermissions unless there are none. The boundary checks read
// only abox's state, so no docker client is used, whatever h holds.
func BoundaryFailures(ctx context.Context, p *project.Project, h Host) []Result {
	env := &Env{
		Paths: p.Paths, Project: p.State, Home: h.Home, Now: h.Now,
		Manifest: p.Manifest, ManifestRaw: p.Raw, Config: p.Config,
	}
	env.setRender(h, p)
	return Failed(Boundary(ctx, env))
}

// UnknownCheckError is a check id that names none of the checks, as given to --skip.
type UnknownCheckError struct{ ID string }

func (e *UnknownCheckError) Error() string { return fmt.Sprintf("--skip %q: no such check", e.ID) }

// SkipSet returns ids as the set [Run] skips, refusing an id that names none of checks with an
// [*UnknownCheckError]: a mistyped id must not leave the check running unnoticed.
func SkipSet(ids []string, checks []Check) (map[string]bool, error) {
	set := map[string]bool{}
	for _, id := range ids {
		if !slices.ContainsFunc(checks, func(c Check) bool { return c.ID == id }) {
			return nil, &UnknownCheckError{ID: id}
		}
		set[id] = true
	}
	return set, nil
}
