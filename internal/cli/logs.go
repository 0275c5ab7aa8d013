package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/telemetry"
)

type logsOptions struct {
	dir                       string
	runs, dns, gateway, jsonl bool
	transcript                string
	limit                     int
}

func newLogsCmd(a *App) *cobra.Command {
	var opts logsOptions
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Show runs, DNS queries, MCP calls or a transcript",
		Long: `Logs reads the project's local telemetry: the runs index (default; EXEC counts what a run
changed in the files that run outside the sandbox and in git's settings, and --json lists each
change as exec_changes), the DNS queries netd answered, the MCP requests netd forwarded to the gateway or refused, or one run's transcript.
Everything shown was harvested from netd at teardown, never from the agent's container.

With --transcript --json, every line is one JSON value: a stream-json event as recorded, or a
line of the agent's output that is not JSON as a JSON string.

With --gateway, when the profile's gateway runs, the last lines of its own log follow (not with
--json), with the gateway token and every bearer credential removed.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runLogs(c.Context(), a, opts) },
	}
	addDirFlag(cmd, &opts.dir)
	f := cmd.Flags()
	f.BoolVar(&opts.runs, "runs", false, "the runs, newest first (the default)")
	f.BoolVar(&opts.dns, "dns", false, "DNS queries of recent runs, with their verdicts")
	f.BoolVar(&opts.gateway, "gateway", false, "MCP requests netd forwarded or refused, and the gateway's own log")
	f.StringVar(&opts.transcript, "transcript", "", "show the transcript of a run (id, id prefix or path)")
	f.IntVarP(&opts.limit, "limit", "n", 20, "how many rows or runs to show")
	f.BoolVar(&opts.jsonl, "json", false, "print JSON")
	return cmd
}

func runLogs(ctx context.Context, a *App, o logsOptions) error {
	p, err := a.loadProject(o.dir)
	if err != nil {
		return err
	}
	if o.limit < 1 {
		return errorf("pass a positive number", "--limit must be at least 1")
	}
	q := telemetry.LogsQuery{Runs: o.runs, DNS: o.dns, Gateway: o.gateway, Transcript: o.transcript, Limit: o.limit}
	logs, bad, err := telemetry.ReadLogs(p.State, q)
	for _, b := range bad {
		a.warnf("the line is skipped; remove it to silence this warning", "corrupt line in %s", b)
	}
	var nt *telemetry.NoTranscriptError
	switch {
	case errors.As(err, &nt):
		return withHint(err, "list runs with `abox logs --runs`")
	case err != nil:
		return err
	case logs.Transcript != "":
		return telemetry.WriteTranscript(a.Out, logs.Transcript, o.jsonl)
	}
	if logs.DNS != nil {
		if err := a.writeLogs(o.jsonl, logs.DNS.Lines, logs.DNS.WriteText); err != nil {
			return err
		}
	}
	if logs.MCP != nil {
		if err := a.writeLogs(o.jsonl, logs.MCP.Lines, logs.MCP.WriteText); err != nil {
			return err
		}
		if !o.jsonl {
			a.showGatewayLog(ctx, p, o.limit)
		}
	}
	if logs.Runs != nil {
		return a.writeLogs(o.jsonl, logs.Runs.Rows, logs.Runs.WriteText)
	}
	return nil
}

// writeLogs prints a report of the logs: its JSON form v with --json, else its text.
func (a *App) writeLogs(asJSON bool, v any, text func(io.Writer)) error {
	if asJSON {
		return a.writeJSON(v)
	}
	text(a.Out)
	return nil
}

// showGatewayLog prints the last lines of the profile's gateway's own log when it runs
// ([gateway.Manager.RunningLog]): the token and every credential removed, control characters
// escaped. The gateway serves every project of the profile, so its log holds their calls too.
func (a *App) showGatewayLog(ctx context.Context, p *project.Project, lines int) {
	profile := p.Manifest.Profile
	text, err := a.gatewayManager().RunningLog(ctx, profile, p.Paths.Gateway(profile), lines)
	if err != nil {
		a.warnf("", "the gateway's own log is not shown: %v", err)
	}
	if text != "" {
		fmt.Fprintf(a.Out, "\nthe last lines of %s's log (every project of profile %s; credentials redacted):\n%s\n",
			gateway.Name(profile), profile, text)
	}
}
