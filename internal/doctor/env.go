package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/watch"
)

// Env is everything the checks may look at, and the cache of what they already looked at.
// The CLI fills the exported fields; a field that could not be loaded is nil with its error
// set, and the checks that need it say so.
type Env struct {
	// Docker runs the docker CLI; nil means there is none, as if the daemon were unreachable.
	Docker *docker.Client
	// LookPath finds an executable on PATH (exec.LookPath).
	LookPath func(string) (string, error)
	Paths    paths.Paths
	Project  paths.Project // Workspace, Hash and Dir are set even when nothing else loaded
	Home     string        // the host home directory, for ~ in git includes

	Manifest    *manifest.Manifest // the workspace manifest; nil when it did not load
	ManifestRaw []byte
	ManifestErr error
	Config      *config.Config // config.yaml; nil when it did not load
	ConfigErr   error
	Catalog     *catalog.Catalog // the servers abox knows; nil when it did not load
	CatalogErr  error
	// Render renders the project's artifacts from the current manifest and configuration, for
	// artifacts.current; nil when they did not load.
	Render func() ([]render.Artifact, error)
	// BinarySHA256 is the sha256 of the running abox binary, which the netd image must hold.
	BinarySHA256 string

	AcceptGit   bool // --accept-git: re-baseline git-tamper, reporting the change once
	AcceptWatch bool // --accept-watch: the same for the exec-surface watch
	// Quick skips the checks that read secret sources (op may ask to unlock): secrets.fresh.
	Quick bool
	// SecretSources reads secret values for secrets.fresh; nil skips it.
	SecretSources *secrets.Sources
	Now           func() time.Time
	Progress      io.Writer // progress of live probes; nil for none
	// Warden starts the warden of the probe's sandbox (--probe).
	Warden sandbox.WardenFunc

	cache cache
}

// cache holds what checks already read. Checks run one at a time, so it needs no lock.
type cache struct {
	daemon     lazy[docker.Version]
	runSpec    lazy[*render.RunSpec]
	index      lazy[*render.Index]
	netdPolicy lazy[*policy.Netd]
	approved   lazy[*approval.Approval]
	sandbox    lazy[[]*docker.Container]
	containers map[string]*lazy[*docker.Container]
	images     map[string]*lazy[*docker.Image]
	networks   map[string]*lazy[*docker.Network]
	probes     lazy[*probeRun]
	store      lazy[secrets.Choice]
	masks      lazy[*sandbox.MaskSet]
	snapshot   lazy[watch.Snapshot]
}

// lazy is a value computed once.
type lazy[T any] struct {
	done bool
	v    T
	err  error
}

func (l *lazy[T]) get(f func() (T, error)) (T, error) {
	if !l.done {
		l.v, l.err = f()
		l.done = true
	}
	return l.v, l.err
}

func lazyIn[T any](m *map[string]*lazy[T], key string) *lazy[T] {
	if *m == nil {
		*m = map[string]*lazy[T]{}
	}
	if (*m)[key] == nil {
		(*m)[key] = &lazy[T]{}
	}
	return (*m)[key]
}

// errNoDocker stands for a missing docker client.
var errNoDocker = errors.New("no docker client")

// daemon asks the daemon for its version once.
func (e *Env) daemon(ctx context.Context) (docker.Version, error) {
	return e.cache.daemon.get(func() (docker.Version, error) {
		if e.Docker == nil {
			return docker.Version{}, errNoDocker
		}
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return e.Docker.Version(ctx)
	})
}

// needDaemon returns a skipping finding and false when the daemon does not answer.
func (e *Env) needDaemon(ctx context.Context) (Finding, bool) {
	if _, err := e.daemon(ctx); err != nil {
		return skipf("start the Docker daemon, then run `abox doctor` again", "the docker daemon does not answer"), false
	}
	return Finding{}, true
}

// daemonUp reports whether the daemon answers, without a finding.
func (e *Env) daemonUp(ctx context.Context) bool {
	_, err := e.daemon(ctx)
	return err == nil
}

func (e *Env) runSpec() (*render.RunSpec, error) {
	return e.cache.runSpec.get(func() (*render.RunSpec, error) { return artifact.ReadRunSpec(e.Project) })
}

func (e *Env) index() (*render.Index, error) {
	return e.cache.index.get(func() (*render.Index, error) { return artifact.ReadIndex(e.Project) })
}

// netdPolicy reads and validates the rendered netd.json.
func (e *Env) netdPolicy() (*policy.Netd, error) {
	return e.cache.netdPolicy.get(func() (*policy.Netd, error) {
		data, err := e.artifactFile(render.NetdDir + "/" + policy.File)
		if err != nil {
			return nil, err
		}
		return policy.Parse(data)
	})
}

// approval is the manifest the last `abox up` approved ([approval.Load]), read once.
func (e *Env) approval() (*approval.Approval, error) {
	return e.cache.approved.get(func() (*approval.Approval, error) { return approval.Load(e.Project) })
}

// approvedManifest is the manifest the last `abox up` approved, or nil when there is none or
// it is corrupt. Its callers only choose what to report (falling back to the workspace's
// manifest); manifest.approved fails on a corrupt approval, naming it.
func (e *Env) approvedManifest() *manifest.Manifest {
	if a, err := e.approval(); err == nil {
		return a.Manifest
	}
	return nil
}

// artifactFile reads an authoritative artifact by its artifacts.json name.
func (e *Env) artifactFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(e.Project.Artifacts(), filepath.FromSlash(name)))
}

// inspect returns the named container, once.
func (e *Env) inspect(ctx context.Context, name string) (*docker.Container, error) {
	return lazyIn(&e.cache.containers, name).get(func() (*docker.Container, error) {
		if e.Docker == nil {
			return nil, errNoDocker
		}
		return e.Docker.ContainerInspect(ctx, name)
	})
}

// image returns the image ref names, once.
func (e *Env) image(ctx context.Context, ref string) (*docker.Image, error) {
	return lazyIn(&e.cache.images, ref).get(func() (*docker.Image, error) {
		if e.Docker == nil {
			return nil, errNoDocker
		}
		return e.Docker.ImageInspect(ctx, ref)
	})
}

// network returns the named network, once.
func (e *Env) network(ctx context.Context, name string) (*docker.Network, error) {
	return lazyIn(&e.cache.networks, name).get(func() (*docker.Network, error) {
		if e.Docker == nil {
			return nil, errNoDocker
		}
		return e.Docker.NetworkInspect(ctx, name)
	})
}

// Sandbox container roles, as labelled.
const (
	roleAgent = "agent"
	roleNetd  = "netd"
)

// sandbox returns the project's running netd and agent containers, inspected.
func (e *Env) sandbox(ctx context.Context) ([]*docker.Container, error) {
	return e.cache.sandbox.get(func() ([]*docker.Container, error) {
		if !e.daemonUp(ctx) {
			return nil, errNoDocker
		}
		list, err := e.Docker.ContainersByLabel(ctx, map[string]string{"abox.hash": e.Project.Hash}, false)
		if err != nil {
			return nil, err
		}
		var out []*docker.Container
		for _, s := range list {
			if r := s.Labels["abox.role"]; r != roleAgent && r != roleNetd {
				continue
			}
			c, err := e.inspect(ctx, s.ID)
			if err != nil {
				return nil, fmt.Errorf("inspecting %s: %w", s.ID, err)
			}
			out = append(out, c)
		}
		return out, nil
	})
}

// role is a container's abox.role label.
func role(c *docker.Container) string { return c.Config.Labels["abox.role"] }

// containerName is a container's name without the daemon's leading slash.
func containerName(c *docker.Container) string {
	if len(c.Name) > 0 && c.Name[0] == '/' {
		return c.Name[1:]
	}
	return c.Name
}
