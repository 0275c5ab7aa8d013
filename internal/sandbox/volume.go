package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
)

// legacyVolumeOwner is who owns a ~/.claude volume filled before abox recorded owners: the agent
// was always uid and gid 1000 then.
var legacyVolumeOwner = render.Identity{UID: policy.AgentUID, GID: policy.AgentUID}

// reownTimeout bounds the container that gives the ~/.claude volume to a new owner.
const reownTimeout = 5 * time.Minute

// CreateClaudeVolume creates the project's ~/.claude volume (rs.ClaudeVol) with labels, and
// reports whether it existed already: [OwnClaudeVolume] re-owns only a volume filled before.
func CreateClaudeVolume(ctx context.Context, d *docker.Client, rs *render.RunSpec, labels map[string]string) (existed bool, err error) {
	_, err = d.VolumeInspect(ctx, rs.ClaudeVol)
	if err != nil && !errors.Is(err, docker.ErrNotFound) {
		return false, fmt.Errorf("inspecting volume %s: %w", rs.ClaudeVol, err)
	}
	existed = err == nil
	if err := d.VolumeCreate(ctx, rs.ClaudeVol, labels); err != nil {
		return existed, fmt.Errorf("creating volume %s: %w", rs.ClaudeVol, err)
	}
	return existed, nil
}

// ReownError is a failed re-owning of the ~/.claude volume by the runspec's reown container.
type ReownError struct {
	Volume string
	Err    error
}

func (e *ReownError) Error() string { return fmt.Sprintf("re-owning volume %s: %v", e.Volume, e.Err) }
func (e *ReownError) Unwrap() error { return e.Err }

// OwnClaudeVolume records who owns the project's ~/.claude volume, first giving a volume that
// existed and was filled for another uid:gid than the agent's now to the agent's, with the
// runspec's reown container (no network, no symlink followed), so a changed owner keeps the
// login. A new volume needs nothing: Docker fills it from the image, whose ~/.claude is the
// agent's. It refuses with [ErrNoAgentUser] a runspec without a numeric --user.
func OwnClaudeVolume(ctx context.Context, d *docker.Client, proj paths.Project, rs *render.RunSpec, existed bool, progress func(string, ...any)) error {
	want, ok := rs.AgentIdentity()
	if !ok {
		return ErrNoAgentUser
	}
	have := legacyVolumeOwner
	if data, err := os.ReadFile(proj.VolumeOwner()); err == nil {
		if id, ok := parseIdentity(strings.TrimSpace(string(data))); ok {
			have = id
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if existed && have != want {
		progress("giving the ~/.claude volume %s to %s (it was %s's): the login is kept", rs.ClaudeVol, want, have)
		ctx, cancel := context.WithTimeout(ctx, reownTimeout)
		defer cancel()
		if _, err := d.Run(ctx, docker.Invocation{Args: rs.Reown.Argv()}); err != nil {
			return &ReownError{Volume: rs.ClaudeVol, Err: err}
		}
	}
	return statefs.WriteFile(proj.VolumeOwner(), []byte(want.String()+"\n"), statefs.PrivateMode)
}

// parseIdentity reads "uid:gid".
func parseIdentity(s string) (render.Identity, bool) {
	rs := render.RunSpec{Agent: render.RunCommand{Args: []string{"--user", s}}}
	return rs.AgentIdentity()
}
