package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
)

// ErrNoDaemon is returned by [Detect] when the daemon does not answer.
var ErrNoDaemon = errors.New("the docker daemon does not answer, so abox cannot tell which secrets store this host has")

// Choice is the store [Detect] picked, and why.
type Choice struct {
	Store Store
	Why   string // what the host showed: "Docker Engine 20.10.24, not Docker Desktop"
}

// Detect picks the store from what the host has: Docker Desktop's secrets engine when the daemon
// is Docker Desktop and `docker mcp secret ls` works, else the abox store in dir.
//
// It fails when the daemon does not answer rather than guess: on a Desktop host whose daemon is
// stopped, a fallback to files would put values on disk that the user expected in the keychain.
func Detect(ctx context.Context, d *docker.Client, dir string) (Choice, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	platform, version, err := serverPlatform(ctx, d)
	if err != nil {
		return Choice{}, err
	}
	files := &FileStore{Dir: dir}
	if !strings.Contains(platform, "Docker Desktop") {
		return Choice{Store: files, Why: fmt.Sprintf("Docker Engine %s, not Docker Desktop", version)}, nil
	}
	desk := &DesktopStore{Docker: d}
	if _, err := desk.List(ctx); err != nil {
		return Choice{Store: files, Why: fmt.Sprintf("%s, but `docker mcp secret ls` fails: %v", platform, err)}, nil
	}
	return Choice{Store: desk, Why: platform + " with `docker mcp`"}, nil
}

// StoredNames lists the store this host has ([Detect]): what `abox secrets attach` reports as
// there or not yet. The error is Detect's, or the store's when it cannot be listed.
func StoredNames(ctx context.Context, d *docker.Client, dir string) ([]string, error) {
	c, err := Detect(ctx, d, dir)
	if err != nil {
		return nil, err
	}
	names, err := c.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	return append([]string{}, names...), nil
}

// serverPlatform returns the daemon's platform name ("Docker Desktop 4.40.0 (187762)"; empty or
// "Docker Engine - Community" elsewhere) and version.
func serverPlatform(ctx context.Context, d *docker.Client) (platform, version string, err error) {
	res, err := d.Run(ctx, docker.Invocation{Args: []string{"version", "--format", "{{json .}}"}})
	var v struct {
		Server *struct {
			Version  string
			Platform struct{ Name string }
		}
	}
	if jerr := json.Unmarshal(bytes.TrimSpace(res.Stdout), &v); jerr != nil || v.Server == nil {
		if err == nil {
			err = errors.New("no server in `docker version`")
		}
		return "", "", fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	return v.Server.Platform.Name, v.Server.Version, nil
}
