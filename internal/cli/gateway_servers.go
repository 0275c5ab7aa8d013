package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/sandbox"
)

// sweepTimeout bounds a sweep of the MCP server containers, from when it starts: the wait for a
// gateway that is starting, and the docker calls. A warden sweeps holding its run's locks.
const sweepTimeout = time.Minute

// sweepServers removes the MCP server containers whose run is over ([gateway.Servers.Sweep]) and
// says so on w, with the servers' names. It runs after every run (the after-run process and a
// warden's takeover), and in `abox gateway up|down` and `abox nuke`.
func (a *App) sweepServers(ctx context.Context, w io.Writer) error {
	cfg, _, ps, err := a.loadConfig()
	if err != nil {
		return err
	}
	sv := gateway.Servers{Docker: a.docker(), Network: cfg.Network, Idle: func() ([]string, error) { return sandbox.IdleSpares(ps.State) }}
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	gone, err := sv.Sweep(ctx, ps.GatewaysDir(), slices.Collect(maps.Keys(cfg.Profiles)))
	if err != nil {
		return err
	}
	if len(gone) > 0 {
		var names []string
		for _, s := range gone {
			names = append(names, fmt.Sprintf("%s (%s)", s.Name, s.Server))
		}
		fmt.Fprintf(w, "removed %d MCP server container(s) left by finished runs: %s\n", len(gone), strings.Join(names, ", "))
	}
	return nil
}
