package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
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
	runs, bad, err := telemetry.ReadRuns(p.State.RunsIndex())
	if err != nil {
		return err
	}
	for _, b := range bad {
		a.warnf("the line is skipped; remove it to silence this warning", "corrupt line in %s", b)
	}
	if o.transcript != "" {
		return a.showTranscript(runs, o)
	}
	any := false
	if o.dns {
		any = true
		if err := a.showDNS(runs, o); err != nil {
			return err
		}
	}
	if o.gateway {
		any = true
		if err := a.showMCP(ctx, p, runs, o); err != nil {
			return err
		}
	}
	if o.runs || !any {
		return a.showRuns(runs, o)
	}
	return nil
}

func (a *App) showRuns(runs []telemetry.RunRecord, o logsOptions) error {
	recent := telemetry.Newest(runs, o.limit)
	if o.jsonl {
		if recent == nil {
			recent = []telemetry.RunRecord{}
		}
		return a.writeJSON(recent)
	}
	if len(recent) == 0 {
		fmt.Fprintln(a.Out, "no runs yet; start one with `abox run \"<prompt>\"`")
		return nil
	}
	rows := [][]string{{"RUN", "WHEN", "MODE", "OUTCOME", "EXIT", "SECS", "DENIED", "REFUSED", "DROPPED", "EXEC", "SESSION"}}
	for _, r := range recent {
		dropped, exec := "-", "-"
		if r.DroppedPackets >= 0 {
			dropped = strconv.FormatInt(r.DroppedPackets, 10)
		}
		if r.ExecChanges != nil {
			exec = strconv.Itoa(len(r.ExecChanges))
		}
		rows = append(rows, []string{r.ID, r.TS, r.PermissionMode, r.Outcome, strconv.Itoa(r.ExitCode),
			fmt.Sprintf("%.1f", r.DurationS), strconv.Itoa(r.DeniedDomains), strconv.Itoa(r.RefusedConns), dropped, exec, r.SessionID})
	}
	table(a.Out, rows)
	for _, r := range recent {
		if r.Model != nil {
			linef(a.Out, "run %s: model API: %s", r.ID, r.Model)
		}
		for _, c := range r.LogCaps {
			fmt.Fprintf(a.Out, "run %s: log cap: %s\n", r.ID, c)
		}
		for _, e := range r.Masks {
			linef(a.Out, "run %s: %s", r.ID, e.String())
		}
	}
	return nil
}

// printLogCaps says which of a run's decision logs hit a bound of netd's, each on a line of
// its own after indent, with a hint when any did.
func printLogCaps(w io.Writer, indent, run string, caps []telemetry.LogCap) {
	for _, c := range caps {
		fmt.Fprintf(w, "%slog cap: %s\n", indent, c)
	}
	if len(caps) > 0 {
		fmt.Fprintf(w, "%s↳ the agent's decisions outgrew netd's logs; read what it did with `abox logs --transcript %s`\n", indent, run)
	}
}

// dnsLine is one DNS query of a run, as shown and as JSON.
type dnsLine struct {
	Run string `json:"run"`
	policy.DNSRecord
}

func (a *App) showDNS(runs []telemetry.RunRecord, o logsOptions) error {
	var lines []dnsLine
	var denied []string // per run with denials: "run ID: name (xN), …"
	var caps []string   // per decision log that hit a bound: "run ID: dns.jsonl: …"
	for _, h := range telemetry.Harvests(telemetry.Newest(runs, o.limit)) {
		r := h.Run
		for _, d := range h.DNS {
			lines = append(lines, dnsLine{Run: r.ID, DNSRecord: d})
		}
		if c := h.DeniedNames(); len(c) > 0 {
			denied = append(denied, fmt.Sprintf("run %s: %s", r.ID, formatCounts(c, 10)))
		}
		for _, c := range h.LogCaps() {
			caps = append(caps, fmt.Sprintf("run %s: %s", r.ID, c))
		}
	}
	if o.jsonl {
		if lines == nil {
			lines = []dnsLine{}
		}
		return a.writeJSON(lines)
	}
	for _, l := range lines {
		linef(a.Out, "%-7s %s %s (%s) run %s%s", l.Verdict, l.TS, l.Name, l.Type, l.Run, repeats(l.Count, l.Last))
	}
	if len(denied) > 0 {
		fmt.Fprintf(a.Out, "denied names, with their counts:\n")
		for _, d := range denied {
			fmt.Fprintf(a.Out, "  %s\n", d)
		}
	}
	if len(caps) > 0 {
		fmt.Fprintf(a.Out, "netd's logs hit a bound:\n")
		for _, c := range caps {
			fmt.Fprintf(a.Out, "  %s\n", c)
		}
	}
	return nil
}

// repeats describes an aggregate line, which stands for count decisions up to last:
// " (x40 until <last>)", or "" for a line of one decision.
func repeats(count int64, last string) string {
	if count == 0 {
		return ""
	}
	return fmt.Sprintf(" (x%d until %s)", count, last)
}

type mcpLine struct {
	Run string `json:"run"`
	policy.MCPRecord
}

func (a *App) showMCP(ctx context.Context, p *project.Project, runs []telemetry.RunRecord, o logsOptions) error {
	var lines []mcpLine
	for _, h := range telemetry.Harvests(telemetry.Newest(runs, o.limit)) {
		for _, m := range h.MCP {
			lines = append(lines, mcpLine{Run: h.Run.ID, MCPRecord: m})
		}
	}
	if o.jsonl {
		if lines == nil {
			lines = []mcpLine{}
		}
		return a.writeJSON(lines)
	}
	for _, l := range lines {
		target := ""
		if l.Tool != "" {
			target = " " + mcpTarget(l.MCPRecord)
		}
		linef(a.Out, "%-7s %s %s%s %s run %s%s", l.Verdict, l.TS, l.Method, target,
			millis(l.DurMS), l.Run, reasonSuffix(l.Reason))
	}
	a.showGatewayLog(ctx, p, o.limit)
	return nil
}

// showGatewayLog prints the last lines of the profile's gateway's own log when it runs, with
// the token and every bearer credential removed and control characters replaced. The gateway
// serves every project of the profile, so its log holds their calls too.
func (a *App) showGatewayLog(ctx context.Context, p *project.Project, lines int) {
	profile := p.Manifest.Profile
	mgr := a.gatewayManager()
	ct, err := mgr.Inspect(ctx, profile)
	switch {
	case errors.Is(err, docker.ErrDaemonUnreachable):
		return
	case err != nil:
		a.warnf("", "the gateway's own log is not shown: %v", err)
		return
	case ct == nil || !ct.State.Running:
		return
	}
	token, _ := gateway.ReadToken(p.Paths.Gateway(profile))
	text := strings.TrimRight(mgr.LogsTail(ctx, profile, token, lines), "\n")
	if text == "" {
		return
	}
	fmt.Fprintf(a.Out, "\nthe last lines of %s's log (every project of profile %s; credentials redacted):\n%s\n",
		gateway.Name(profile), profile, text)
}

// showTranscript pretty-prints a run's transcript, found by path, id or id prefix; with --json
// it prints it as JSON lines.
func (a *App) showTranscript(runs []telemetry.RunRecord, o logsOptions) error {
	path := telemetry.FindTranscript(runs, o.transcript)
	if path == "" {
		return errorf("list runs with `abox logs --runs`", "no transcript for run %q", o.transcript)
	}
	var sum telemetry.Summary
	return telemetry.ScanTranscript(path, func(line []byte) error {
		if o.jsonl {
			_, err := a.Out.Write(telemetry.TranscriptJSON(line))
			return err
		}
		if ev, ok := sum.Observe(line); ok {
			telemetry.Pretty(a.Out, ev)
		}
		return nil
	})
}
