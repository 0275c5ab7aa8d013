package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/sandbox"
)

// newWardenCmd is the hidden command every `abox run` and `abox shell` starts before its netd
// ([sandbox.ProcessWarden]): the run's warden, which finishes the run if abox dies without
// doing so ([sandbox.Ward]). It ignores the signals of a terminal and of a process group: it is
// not a thing a person stops, and it ends by itself once its run is finished with.
func newWardenCmd(a *App) *cobra.Command {
	var runDir string
	var held int
	cmd := &cobra.Command{
		Use:    "warden",
		Short:  "Finish a run whose abox died (started by abox run)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGPIPE,
				syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
			keepHeld(held)
			lowerOOMScore()
			// Nothing ends the warden but its run: not the signals Main's context follows.
			ctx := context.WithoutCancel(c.Context())
			out, err := sandbox.Ward(ctx, sandbox.WardEnv{
				Docker: a.docker(), RunDir: runDir, In: os.Stdin, Ready: os.Stdout, Log: a.Err, Collect: a.collectClone,
			})
			if err != nil || out == nil {
				return err
			}
			fmt.Fprintf(a.Err, "run %s recorded as %s\n", out.ID, out.Result)
			// abox's after-run process is not coming: remove what the gateway left of the run.
			return a.sweepServers(ctx, a.Err)
		},
	}
	cmd.Flags().StringVar(&runDir, "run-dir", "", "the run's directory")
	cmd.Flags().IntVar(&held, "held", 0, "how many locks the run handed over, from descriptor 3")
	cmd.MarkFlagRequired("run-dir")
	return cmd
}

// keepHeld marks the n locks handed over from descriptor 3 close-on-exec: the warden holds them,
// the docker commands it runs must not.
func keepHeld(n int) {
	for fd := 3; fd < 3+n; fd++ {
		syscall.CloseOnExec(fd)
	}
}

// lowerOOMScore asks the kernel to pick the warden last when memory runs out, after the abox it
// guards. Only root may lower it; for anyone else the warden keeps abox's score, and its small
// size.
func lowerOOMScore() {
	os.WriteFile("/proc/self/oom_score_adj", []byte("-500\n"), 0)
}

// collectClone collects the clone of isolated run id of the project, as `abox run` does after
// the run. The agent never saw this project's workspace (its own was the clone), so its
// manifest is the user's.
func (a *App) collectClone(ctx context.Context, proj paths.Project, id string) error {
	p, err := a.loadProject(proj.Workspace)
	if err != nil {
		return err
	}
	_, err = p.Isolated().Collect(ctx, id)
	return err
}
