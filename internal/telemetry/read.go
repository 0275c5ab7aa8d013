package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/aboxhq/abox/internal/termtext"
)

// Newest returns the last n of runs (oldest first, as [ReadRuns] returns them), newest first.
func Newest(runs []RunRecord, n int) []RunRecord {
	var out []RunRecord
	for i := len(runs) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, runs[i])
	}
	return out
}

// RunHarvest is a run with what abox harvested from its netd.
type RunHarvest struct {
	Run RunRecord
	*Harvest
}

// Harvests reads the harvest of each run, in order. A run whose harvest cannot be read (netd
// never started, or its directory is gone) is left out.
func Harvests(runs []RunRecord) []RunHarvest {
	var out []RunHarvest
	for _, r := range runs {
		h, err := ReadHarvest(filepath.Join(r.RunDir, "netd"))
		if err != nil {
			continue
		}
		out = append(out, RunHarvest{Run: r, Harvest: h})
	}
	return out
}

// FindTranscript returns the path of the transcript arg names: arg itself when it is a file,
// else the transcript of the newest run whose id starts with arg; "" when there is none.
func FindTranscript(runs []RunRecord, arg string) string {
	if _, err := os.Stat(arg); err == nil {
		return arg
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if strings.HasPrefix(runs[i].ID, arg) && runs[i].Transcript != "" {
			return runs[i].Transcript
		}
	}
	return ""
}

// ScanTranscript calls fn with every line of the transcript at path, up to 64 MiB a line (the
// agent's output decides how long a line is).
func ScanTranscript(path string, fn func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// TranscriptJSON is one transcript line as one line of JSON that decodes to what was recorded:
// a stream-json event compacted (JSON's own whitespace may hold a carriage return), anything
// else the agent printed as a JSON string. termtext.JSON escapes what JSON leaves raw.
func TranscriptJSON(line []byte) []byte {
	var b bytes.Buffer
	if json.Valid(line) {
		json.Compact(&b, line)
	} else {
		enc := json.NewEncoder(&b) // writes the newline itself
		enc.SetEscapeHTML(false)
		enc.Encode(string(line))
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n')
	}
	return termtext.JSON(b.Bytes())
}
