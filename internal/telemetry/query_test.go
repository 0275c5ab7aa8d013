package telemetry

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aboxhq/abox/internal/paths"
)

// TestReadLogs: with no report asked for, the runs; each asked-for report and no other; one
// transcript alone; a run without one refused by name; the corrupt lines returned each time.
func TestReadLogs(t *testing.T) {
	ps := paths.Paths{Config: t.TempDir(), State: t.TempDir()}
	p := ps.Project(t.TempDir())
	if err := os.MkdirAll(filepath.Dir(p.RunsIndex()), 0o700); err != nil {
		t.Fatal(err)
	}
	transcript := filepath.Join(t.TempDir(), "transcript.jsonl")
	write(t, filepath.Dir(transcript), filepath.Base(transcript), "{}\n")
	AppendRun(p.RunsIndex(), RunRecord{ID: "a1", Transcript: transcript})
	f, _ := os.OpenFile(p.RunsIndex(), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"id\": \"cut off\n")
	f.Close()
	AppendRun(p.RunsIndex(), RunRecord{ID: "b2"})

	for _, c := range []struct {
		name               string
		q                  LogsQuery
		dns, mcp, runs     bool
		transcript, refuse bool
	}{
		{"default", LogsQuery{Limit: 5}, false, false, true, false, false},
		{"dns", LogsQuery{DNS: true, Limit: 5}, true, false, false, false, false},
		{"dns and gateway", LogsQuery{DNS: true, Gateway: true, Limit: 5}, true, true, false, false, false},
		{"gateway and runs", LogsQuery{Gateway: true, Runs: true, Limit: 5}, false, true, true, false, false},
		{"transcript", LogsQuery{Transcript: "a", DNS: true, Limit: 5}, false, false, false, true, false},
		{"no transcript", LogsQuery{Transcript: "b2", Limit: 5}, false, false, false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, bad, err := ReadLogs(p, c.q)
			if len(bad) != 1 || bad[0].Line != 2 {
				t.Errorf("corrupt lines = %v, want line 2", bad)
			}
			var nt *NoTranscriptError
			if c.refuse {
				if !errors.As(err, &nt) || err.Error() != `no transcript for run "b2"` {
					t.Errorf("ReadLogs = %v, want a NoTranscriptError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (l.DNS != nil) != c.dns || (l.MCP != nil) != c.mcp || (l.Runs != nil) != c.runs || (l.Transcript == transcript) != c.transcript {
				t.Errorf("ReadLogs = %+v", l)
			}
			if c.runs && (len(l.Runs.Rows) != 2 || l.Runs.Rows[0].ID != "b2") {
				t.Errorf("runs = %+v, want both, newest first", l.Runs.Rows)
			}
		})
	}
}
