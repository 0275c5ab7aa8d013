package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"strings"
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
	res := &gateway.ProbeResult{Tools: []json.RawMessage{}}
	token, err := readTokenLine(a.In)
	u, uerr := url.Parse(rawURL)
	switch {
	case uerr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		res.Error = "not an http(s) URL: " + rawURL
	case err != nil || token == "":
		res.Error = "no token on stdin"
	default:
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		res = gateway.Probe(ctx, rawURL, token)
	}
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

// readTokenLine reads the first line of r, at most 4 KiB.
func readTokenLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimSpace(line), nil
}
