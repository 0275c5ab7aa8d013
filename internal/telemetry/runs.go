package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/watch"
)

// RunRecord is one row of runs.jsonl. The prompt itself is never stored, only its digest.
type RunRecord struct {
	ID             string   `json:"id"`
	TS             string   `json:"ts"` // start, RFC 3339 UTC
	Project        string   `json:"project"`
	Profile        string   `json:"profile"`
	Kind           string   `json:"kind"`       // run or shell
	PromptSHA      string   `json:"prompt_sha"` // first 16 hex of sha256(prompt), or "interactive"
	DurationS      float64  `json:"duration_s"`
	ExitCode       int      `json:"exit_code"`
	SessionID      string   `json:"session_id"`
	Container      string   `json:"container"`
	Transcript     string   `json:"transcript"`
	RunDir         string   `json:"run_dir"`
	PermissionMode string   `json:"permission_mode"`
	Servers        []string `json:"servers"`
	ToolCalls      int      `json:"tool_calls"`
	DeniedDomains  int      `json:"denied_domains"`
	RefusedConns   int      `json:"refused_connections"`
	DroppedPackets int64    `json:"dropped_packets"`
	Outcome        string   `json:"outcome"` // exited, timeout, interrupted, netd-died, refused
	Notes          []string `json:"notes,omitempty"`
	// LogCaps are the decision logs that hit one of netd's bounds during the run.
	LogCaps []LogCap `json:"log_caps,omitempty"`
	// Masks lists the masks that did not hold at teardown what they held at start.
	Masks []MaskEvent `json:"masks,omitempty"`
	// ExecChanges are what the run changed in the files that run outside the sandbox and in
	// the git state: abox's own snapshots of the workspace, taken on the host before the agent
	// started and after its container was gone. [] for a run that changed none; null in a
	// record written before runs were watched.
	ExecChanges []watch.ExecChange `json:"exec_changes"`
	// ExecCapped are the watch patterns that hit a bound in the snapshot after the run.
	ExecCapped []watch.Capped `json:"exec_capped,omitempty"`
	// ExecGitCapped are the bounds the reading of git hit in the snapshot after the run.
	ExecGitCapped []watch.Capped `json:"exec_git_capped,omitempty"`
	// Model is what the run spent through netd's model forwarder; absent in login-volume mode.
	Model *ModelUsage `json:"model,omitempty"`
	// Workspace is "isolated" for a run on a private clone, whose result is Branch in the
	// user's repository; absent for a live run.
	Workspace string `json:"workspace,omitempty"`
	Branch    string `json:"branch,omitempty"`
	// NetdStarted is when the run's netd was started, for a run whose netd was a spare started
	// ahead (after an earlier run); absent when the run started its own.
	NetdStarted string `json:"netd_started,omitempty"`
}

// AppendRun appends one row to runs.jsonl.
func AppendRun(path string, r RunRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return statefs.AppendLine(path, b)
}

// CorruptLine is a line of a JSON-lines file that does not decode.
type CorruptLine struct {
	File string
	Line int
}

func (c CorruptLine) String() string { return fmt.Sprintf("%s:%d", c.File, c.Line) }

// ReadRuns reads runs.jsonl, oldest first. Lines that do not decode (a crash mid-write) are
// skipped and returned, so the caller can name them.
func ReadRuns(path string) ([]RunRecord, []CorruptLine, error) {
	var out []RunRecord
	bad, err := readLines(path, func(line []byte) error {
		var r RunRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, bad, err
}

// readLines calls fn for every non-empty line of path. A missing file is empty.
func readLines(path string, fn func([]byte) error) ([]CorruptLine, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	var bad []CorruptLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			bad = append(bad, CorruptLine{File: path, Line: n})
		}
	}
	if err := sc.Err(); err != nil {
		return bad, fmt.Errorf("reading %s: %w", path, err)
	}
	return bad, nil
}
