package cli

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/netd"
)

// newNetdCmd is the hidden entry point of the netd container: the netd image runs this same
// binary as `abox netd`. Its arguments go to netd unparsed.
//
// netd decides what its signals mean (SIGHUP reloads its policy, SIGUSR1 finishes it), so it
// does not take the ending of abox's own commands ([notifyEnd]: a SIGHUP there is a closed
// terminal): its context ends at SIGINT and SIGTERM alone.
func newNetdCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:                "netd",
		Short:              "Run netd, the sandbox's network daemon (inside the netd container only)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.WithoutCancel(c.Context()), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if code := netd.Main(ctx, args, a.Out, a.Err); code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
}
