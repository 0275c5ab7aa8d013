package cli

import (
	"context"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/remedy"
)

// docker returns a client for the docker CLI, tracing argv to stderr with --verbose.
func (a *App) docker() *docker.Client {
	if a.dockerClient != nil {
		return a.dockerClient
	}
	var trace = a.Err
	if !a.Verbose {
		trace = nil
	}
	a.dockerClient = docker.NewClient(&docker.ExecRunner{}, trace)
	return a.dockerClient
}

// requireDaemon checks that the docker daemon answers, with a hint when it does not.
func (a *App) requireDaemon(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := a.docker().Version(ctx)
	return remedy.Daemon(err)
}
