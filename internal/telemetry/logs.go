package telemetry

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/termtext"
)

// The reports of `abox logs`: the runs index ([RunsReport]), the DNS queries and the MCP
// requests of recent runs as netd logged them ([DNSReport], [MCPReport]), and a transcript
// ([WriteTranscript]). Each has a text form for a person, in which everything the agent chose is
// escaped, and a JSON form (its rows or lines) that keeps the recorded bytes.

// RunRow is a run as `abox logs --runs --json` shows it: its record, and for an isolated run
// the state of its branch now (pending, merged, discarded), which changes after the record.
type RunRow struct {
	RunRecord
	Isolated string `json:"isolated_state,omitempty"`
}

// RunsReport is `abox logs --runs`: the newest runs, newest first. Rows, never nil, is its
// JSON form.
type RunsReport struct {
	Rows []RunRow
}

// NewRunsReport reports the newest n of runs. iso reads the records of isolated runs, for the
// state of their branches.
func NewRunsReport(runs []RunRecord, n int, iso *isolate.Repo) RunsReport {
	rep := RunsReport{Rows: []RunRow{}}
	for _, r := range Newest(runs, n) {
		rep.Rows = append(rep.Rows, RunRow{RunRecord: r, Isolated: branchState(iso, r)})
	}
	return rep
}

// PendingNotCollected is the state of an isolated run whose branch was never brought into the
// user's repository.
const PendingNotCollected = "pending, not collected"

// branchState is the state of an isolated run's branch now; "" for a live run, "gone" when its
// record is, "unreadable" when it does not read.
func branchState(iso *isolate.Repo, r RunRecord) string {
	if r.Branch == "" {
		return ""
	}
	run, err := iso.Load(r.ID)
	switch {
	case errors.Is(err, isolate.ErrNotFound):
		return "gone"
	case err != nil:
		return "unreadable"
	case run.State == isolate.Pending && run.Tip == "":
		return PendingNotCollected
	}
	return run.State
}

// WriteText prints the runs as a table, then what each run says beyond its row: model usage,
// log caps, masks that did not hold and the state of an isolated run's branch.
func (rep RunsReport) WriteText(w io.Writer) {
	if len(rep.Rows) == 0 {
		fmt.Fprintln(w, "no runs yet; start one with `abox run \"<prompt>\"`")
		return
	}
	rows := [][]string{{"RUN", "WHEN", "MODE", "OUTCOME", "EXIT", "SECS", "DENIED", "REFUSED", "DROPPED", "EXEC", "SESSION"}}
	for _, r := range rep.Rows {
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
	termtext.Table(w, rows)
	for _, r := range rep.Rows {
		if r.Model != nil {
			termtext.Linef(w, "run %s: model API: %s", r.ID, r.Model)
		}
		for _, c := range r.LogCaps {
			fmt.Fprintf(w, "run %s: log cap: %s\n", r.ID, c)
		}
		for _, e := range r.Masks {
			termtext.Linef(w, "run %s: %s", r.ID, e.String())
		}
		if st := r.Isolated; st != "" {
			termtext.Linef(w, "run %s: isolated, branch %s, %s", r.ID, r.Branch, st)
			if st == isolate.Pending {
				termtext.Linef(w, "  ↳ review with `abox diff %s`, then `abox merge %s` or `abox discard %s`", r.ID, r.ID, r.ID)
			}
		}
	}
}

// DNSLine is one DNS query of a run, as shown and as JSON.
type DNSLine struct {
	Run string `json:"run"`
	policy.DNSRecord
}

// RunNames are the names one run was denied, most frequent first.
type RunNames struct {
	Run   string
	Names []NameCount
}

// RunLogCap is a decision log of one run that hit a bound of netd's.
type RunLogCap struct {
	Run string
	Cap LogCap
}

// DNSReport is `abox logs --dns`: the DNS queries of recent runs, the names each was denied
// (past the log's cap too) and the logs that hit a bound. Lines, never nil, is its JSON form.
type DNSReport struct {
	Lines  []DNSLine
	Denied []RunNames  // the runs with denials
	Caps   []RunLogCap // the decision logs that hit a bound, of every kind
}

// NewDNSReport reports the newest n of runs whose harvest reads.
func NewDNSReport(runs []RunRecord, n int) DNSReport {
	rep := DNSReport{Lines: []DNSLine{}}
	for _, h := range Harvests(Newest(runs, n)) {
		r := h.Run
		for _, d := range h.DNS {
			rep.Lines = append(rep.Lines, DNSLine{Run: r.ID, DNSRecord: d})
		}
		if c := h.DeniedNames(); len(c) > 0 {
			rep.Denied = append(rep.Denied, RunNames{Run: r.ID, Names: c})
		}
		for _, c := range h.LogCaps() {
			rep.Caps = append(rep.Caps, RunLogCap{Run: r.ID, Cap: c})
		}
	}
	return rep
}

// WriteText prints one line a query, then the denied names of each run with their counts (up
// to 10 a run), then the logs that hit a bound.
func (rep DNSReport) WriteText(w io.Writer) {
	for _, l := range rep.Lines {
		termtext.Linef(w, "%-7s %s %s (%s) run %s%s", l.Verdict, l.TS, l.Name, l.Type, l.Run, repeats(l.Count, l.Last))
	}
	if len(rep.Denied) > 0 {
		fmt.Fprintf(w, "denied names, with their counts:\n")
		for _, d := range rep.Denied {
			fmt.Fprintf(w, "  run %s: %s\n", d.Run, FormatCounts(d.Names, 10))
		}
	}
	if len(rep.Caps) > 0 {
		fmt.Fprintf(w, "netd's logs hit a bound:\n")
		for _, c := range rep.Caps {
			fmt.Fprintf(w, "  run %s: %s\n", c.Run, c.Cap)
		}
	}
}

// FormatCounts shows up to n names with their counts: "a.test (x3), b.test (x1), and 2 more".
// The names come from the agent (a TLS server name may hold any byte): each is escaped.
func FormatCounts(list []NameCount, n int) string {
	var parts []string
	for i, c := range list {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (x%d)", termtext.Line(c.Name), c.Count))
	}
	return strings.Join(parts, ", ")
}

// repeats describes an aggregate line, which stands for count decisions up to last:
// " (x40 until <last>)", or "" for a line of one decision.
func repeats(count int64, last string) string {
	if count == 0 {
		return ""
	}
	return fmt.Sprintf(" (x%d until %s)", count, last)
}

// MCPLine is one MCP request of a run that netd forwarded to the gateway or refused.
type MCPLine struct {
	Run string `json:"run"`
	policy.MCPRecord
}

// MCPReport is `abox logs --gateway`: the MCP requests of recent runs. Lines, never nil, is its
// JSON form.
type MCPReport struct {
	Lines []MCPLine
}

// NewMCPReport reports the newest n of runs whose harvest reads.
func NewMCPReport(runs []RunRecord, n int) MCPReport {
	rep := MCPReport{Lines: []MCPLine{}}
	for _, h := range Harvests(Newest(runs, n)) {
		for _, m := range h.MCP {
			rep.Lines = append(rep.Lines, MCPLine{Run: h.Run.ID, MCPRecord: m})
		}
	}
	return rep
}

// WriteText prints one line a request: verdict, time, method, the tool it called, how long it
// took, and netd's reason when there is one.
func (rep MCPReport) WriteText(w io.Writer) {
	for _, l := range rep.Lines {
		target := ""
		if l.Tool != "" {
			target = " " + mcpTarget(l.MCPRecord)
		}
		termtext.Linef(w, "%-7s %s %s%s %s run %s%s", l.Verdict, l.TS, l.Method, target,
			millis(l.DurMS), l.Run, reasonSuffix(l.Reason))
	}
}

// WriteTranscript prints the transcript at path: pretty, one line an event that shows, or with
// asJSON every line as one JSON value ([TranscriptJSON]).
func WriteTranscript(w io.Writer, path string, asJSON bool) error {
	var sum Summary
	return ScanTranscript(path, func(line []byte) error {
		if asJSON {
			_, err := w.Write(TranscriptJSON(line))
			return err
		}
		if ev, ok := sum.Observe(line); ok {
			Pretty(w, ev)
		}
		return nil
	})
}
