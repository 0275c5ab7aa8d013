package doctor

import (
	"context"
	"errors"
	"io/fs"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/docker"
)

// hostDocker: the docker CLI is installed. abox drives it rather than the socket, so without it
// nothing else can be looked at.
func hostDocker(_ context.Context, e *Env) Finding {
	if e.LookPath == nil {
		return skipf("", "no PATH lookup available")
	}
	p, err := e.LookPath("docker")
	if err != nil {
		return failf("install the docker CLI (Docker Engine ≥ 20.10, or Docker Desktop), then run `abox doctor` again",
			"docker is not on PATH")
	}
	return okf("%s", p).with("path", p)
}

// hostDockerDaemon: the daemon answers, and which versions talk.
func hostDockerDaemon(ctx context.Context, e *Env) Finding {
	v, err := e.daemon(ctx)
	switch {
	case errors.Is(err, errNoDocker):
		return failf("install the docker CLI, then run `abox doctor` again", "no docker CLI to ask")
	case errors.Is(err, docker.ErrDaemonUnreachable):
		return failf("start the Docker daemon (`dockerd`, or Docker Desktop), then run `abox doctor` again",
			"the docker daemon does not answer: %v", err)
	case err != nil:
		return failf("check that `docker version` works, then run `abox doctor` again", "docker version: %v", err)
	}
	return okf("Engine %s (API %s), CLI %s", v.Server, v.ServerAPI, v.Client).
		with("server", v.Server).with("server_api", v.ServerAPI).with("client", v.Client)
}

// hostNetwork: the bridge network every sandbox and the gateway join exists, is a bridge, and
// is what the runspec names.
func hostNetwork(ctx context.Context, e *Env) Finding {
	rs, err := e.runSpec()
	if err != nil {
		return notRendered(err)
	}
	if f, ok := e.needDaemon(ctx); !ok {
		return f
	}
	n, err := e.network(ctx, rs.Network)
	switch {
	case errors.Is(err, docker.ErrNotFound):
		return failf("run `abox up` to create it", "network %s does not exist", rs.Network)
	case err != nil:
		return failf("check `docker network inspect "+rs.Network+"`, then run `abox doctor` again", "network %s: %v", rs.Network, err)
	case n.Driver != "bridge":
		return failf("remove it and run `abox up` to create a bridge network", "network %s has driver %q, not bridge", rs.Network, n.Driver)
	case n.EnableIPv6:
		return warnf("recreate it without IPv6 (`docker network rm "+rs.Network+"`, then `abox up`); netd drops IPv6 anyway",
			"network %s has IPv6 enabled", rs.Network)
	}
	return okf("%s: bridge, IPv4 only", rs.Network).with("network", rs.Network)
}

// notRendered is the finding of a check that needs rendered artifacts that are missing or
// unreadable (artifacts.rendered says which).
func notRendered(err error) Finding {
	if errors.Is(err, artifact.ErrNotRendered) || errors.Is(err, fs.ErrNotExist) {
		return skipf("run `abox up` to render and build the sandbox", "nothing rendered yet")
	}
	return skipf("run `abox render` to write the artifacts again", "cannot read the artifacts: %v", err)
}
