package cli

import (
	"context"
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/gateway"
)

// newMCPProbeCmd is the health probe of a gateway, run by abox inside the netd image on the
// gateway's network: the gateway publishes nothing, so the host cannot reach it. The token is
// read from stdin so that it never appears in an argv.
func newMCPProbeCmd(a *App) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    "mcp-probe URL",
		Short:  "Initialize an MCP session at URL and list its tools (token on stdin; JSON on stdout)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runMCPProbe(c.Context(), a, args[0], timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up after this long")
	return cmd
}

func runMCPProbe(ctx context.Context, a *App, rawURL string, timeout time.Duration) error {
	res := gateway.ProbeCommand(ctx, rawURL, a.In, timeout)
	enc := json.NewEncoder(a.Out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return err
	}
	if !res.OK {
		return silentExit(ExitError)
	}
	return nil
}
