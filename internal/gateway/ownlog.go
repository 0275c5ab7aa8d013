package gateway

import (
	"context"
	"errors"
	"strings"

	"github.com/aboxhq/abox/internal/docker"
)

// RunningLog returns the last lines of the profile's gateway's own log, with the gateway's
// token (read from dir, the profile's gateway directory) and every credential removed
// ([Manager.LogsTail]), when the gateway runs; "" when it does not, or when no daemon answers.
// The gateway serves every project of the profile, so its log holds their calls too.
func (m *Manager) RunningLog(ctx context.Context, profile, dir string, lines int) (string, error) {
	ct, err := m.Inspect(ctx, profile)
	switch {
	case errors.Is(err, docker.ErrDaemonUnreachable):
		return "", nil
	case err != nil:
		return "", err
	case ct == nil || !ct.State.Running:
		return "", nil
	}
	token, _ := ReadToken(dir)
	return strings.TrimRight(m.LogsTail(ctx, profile, token, lines), "\n"), nil
}
