package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
)

// reloadTimeout bounds asking docker which sandboxes run and signalling them.
const reloadTimeout = 20 * time.Second

// Reloaded is what [Reload] did.
type Reloaded struct {
	Skipped  error    // docker could not be asked which sandboxes run; nothing was signalled
	Reloaded []string // netd containers that got the reload signal
	Failed   []string // "name: error" of those that did not
}

// String says what happened, as one line for the end of a command's result. Names and errors
// come from docker: print it through termtext.Line.
func (r Reloaded) String() string {
	switch n := len(r.Reloaded) + len(r.Failed); {
	case r.Skipped != nil:
		return "running sandboxes were not reloaded: " + r.Skipped.Error()
	case n == 0:
		return "no sandbox of this project is running; the next run uses the new allowlist"
	case len(r.Failed) == 0:
		return fmt.Sprintf("reloaded %s: %s", countNoun(n, "running sandbox", "running sandboxes"), strings.Join(r.Reloaded, ", "))
	default:
		return fmt.Sprintf("reloaded %d of %s; not reloaded: %s; it keeps the old allowlist until it is "+
			"restarted or reloaded with `docker kill --signal HUP <name>`", len(r.Reloaded),
			countNoun(n, "running sandbox", "running sandboxes"), strings.Join(r.Failed, "; "))
	}
}

func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ReloadHooks are what [Reload] says while it works: ready checks that the daemon answers
// (its error is what Skipped says); warn and progress print a line each.
type ReloadHooks struct {
	Ready    func(context.Context) error
	Warn     func(format string, args ...any)
	Progress func(format string, args ...any)
}

// Reload signals the netd of every running sandbox of the project whose hash is given to re-read
// its policy, and says which got the signal. A delivered SIGHUP is what counts as reloaded: netd
// re-reads its policy files on it.
func Reload(ctx context.Context, d *docker.Client, hash string, h ReloadHooks) Reloaded {
	ctx, cancel := context.WithTimeout(ctx, reloadTimeout)
	defer cancel()
	if err := h.Ready(ctx); err != nil {
		return Reloaded{Skipped: err}
	}
	cs, err := d.ContainersByLabel(ctx, map[string]string{"abox.hash": hash, "abox.role": "netd"}, false)
	if err != nil {
		h.Warn("could not list running sandboxes: %v", err)
		return Reloaded{Skipped: fmt.Errorf("listing them: %w", err)}
	}
	var r Reloaded
	for _, c := range cs {
		name := strings.Join(c.Names, ",")
		if err := d.Kill(ctx, c.ID, "HUP"); err != nil {
			h.Warn("reloading a running sandbox: %v", err)
			r.Failed = append(r.Failed, name+": "+err.Error())
			continue
		}
		h.Progress("reloaded the policy of running sandbox %s", name)
		r.Reloaded = append(r.Reloaded, name)
	}
	return r
}
