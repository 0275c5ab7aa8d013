package telemetry

import (
	"fmt"

	"github.com/aboxhq/abox/internal/isolate"
	"github.com/aboxhq/abox/internal/paths"
)

// LogsQuery is what `abox logs` asks of a project's telemetry.
type LogsQuery struct {
	Runs, DNS, Gateway bool   // the reports asked for; none is Runs
	Transcript         string // a run id, id prefix or path: that transcript alone
	Limit              int    // rows or runs per report
}

// Logs is what `abox logs` shows: the path of one transcript alone, or the reports asked for,
// each nil when not asked.
type Logs struct {
	Transcript string
	DNS        *DNSReport
	MCP        *MCPReport
	Runs       *RunsReport
}

// NoTranscriptError is a run that names no transcript.
type NoTranscriptError struct{ Run string }

func (e *NoTranscriptError) Error() string { return fmt.Sprintf("no transcript for run %q", e.Run) }

// ReadLogs reads the runs index of project p and builds what q asks for: the transcript of
// q.Transcript ([FindTranscript], a [*NoTranscriptError] when none matches), else the DNS and MCP
// reports asked for and the runs, which are also what no other report asked for gives. The
// index's corrupt lines are returned to be reported, whatever the error.
func ReadLogs(p paths.Project, q LogsQuery) (*Logs, []CorruptLine, error) {
	runs, bad, err := ReadRuns(p.RunsIndex())
	if err != nil {
		return nil, nil, err
	}
	if q.Transcript != "" {
		path := FindTranscript(runs, q.Transcript)
		if path == "" {
			return nil, bad, &NoTranscriptError{Run: q.Transcript}
		}
		return &Logs{Transcript: path}, bad, nil
	}
	l := &Logs{}
	if q.DNS {
		rep := NewDNSReport(runs, q.Limit)
		l.DNS = &rep
	}
	if q.Gateway {
		rep := NewMCPReport(runs, q.Limit)
		l.MCP = &rep
	}
	if q.Runs || !q.DNS && !q.Gateway {
		rep := NewRunsReport(runs, q.Limit, &isolate.Repo{Project: p})
		l.Runs = &rep
	}
	return l, bad, nil
}
