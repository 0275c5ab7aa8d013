package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
)

// legacyVolumeOwner is who owns a ~/.claude volume filled before abox recorded owners: the agent
// was always uid and gid 1000 then.
var legacyVolumeOwner = render.Identity{UID: policy.AgentUID, GID: policy.AgentUID}

// ensureClaudeVolume creates the project's ~/.claude volume, or, when it exists and was filled
// for another uid:gid than the agent's now, gives it to the agent's with the runspec's reown
// container (no network, no symlink followed), so a changed owner keeps the login. A new volume
// needs nothing: Docker fills it from the image, whose ~/.claude is the agent's.
func (a *App) ensureClaudeVolume(ctx context.Context, p *project, rs *render.RunSpec, existed bool) error {
	want, ok := rs.AgentIdentity()
	if !ok {
		return errorf("run `abox render` to write runspec.json again", "runspec.json gives the agent no numeric --user")
	}
	have := legacyVolumeOwner
	if data, err := os.ReadFile(p.state.VolumeOwner()); err == nil {
		if id, ok := parseIdentity(strings.TrimSpace(string(data))); ok {
			have = id
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if existed && have != want {
		a.progressf("giving the ~/.claude volume %s to %s (it was %s's): the login is kept", rs.ClaudeVol, want, have)
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if _, err := a.docker().Run(ctx, docker.Invocation{Args: rs.Reown.Argv()}); err != nil {
			return withHint(fmt.Errorf("re-owning volume %s: %w", rs.ClaudeVol, err), "run `abox up` again once the agent image is built")
		}
	}
	return statefs.WriteFile(p.state.VolumeOwner(), []byte(want.String()+"\n"), statefs.PrivateMode)
}

// parseIdentity reads "uid:gid".
func parseIdentity(s string) (render.Identity, bool) {
	rs := render.RunSpec{Agent: render.RunCommand{Args: []string{"--user", s}}}
	return rs.AgentIdentity()
}
