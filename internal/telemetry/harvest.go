package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/policy"
)

// Harvest is what netd logged during one run.
type Harvest struct {
	DNS      []policy.DNSRecord
	Conns    []policy.ConnRecord
	MCP      []policy.MCPRecord
	Model    []policy.ModelRecord // the model forwarder's requests (injected-credential mode)
	Events   []policy.Event
	Counters *policy.Counters // nil when netd died before writing them
	// Stats is netd's account of its decision logs; nil when netd wrote none or it does not
	// decode.
	Stats *policy.LogStats
	// Truncated holds the truncation line of each decision log that reached its cap, by file
	// name.
	Truncated map[string]policy.Truncation
	Corrupt   []CorruptLine
}

// ReadHarvest reads the netd logs copied into dir.
func ReadHarvest(dir string) (*Harvest, error) {
	h := &Harvest{Truncated: map[string]policy.Truncation{}}
	files := []struct {
		name string
		fn   func([]byte) error
	}{
		{policy.DNSLog, decodeLog(&h.DNS, policy.DNSLog, h.Truncated)},
		{policy.ConnLog, decodeLog(&h.Conns, policy.ConnLog, h.Truncated)},
		{policy.MCPLog, decodeLog(&h.MCP, policy.MCPLog, h.Truncated)},
		{policy.ModelLog, decodeLog(&h.Model, policy.ModelLog, h.Truncated)},
		{policy.EventLog, decodeInto(&h.Events)},
	}
	for _, f := range files {
		bad, err := readLines(filepath.Join(dir, f.name), f.fn)
		if err != nil {
			return nil, err
		}
		h.Corrupt = append(h.Corrupt, bad...)
	}
	var err error
	if h.Counters, err = readJSONFile[policy.Counters](dir, policy.CountersLog, &h.Corrupt); err != nil {
		return nil, err
	}
	if h.Stats, err = readJSONFile[policy.LogStats](dir, policy.LogStatsFile, &h.Corrupt); err != nil {
		return nil, err
	}
	h.dropSelfTest()
	return h, nil
}

// readJSONFile reads one JSON document netd wrote: nil when the file is missing, or empty (netd
// stopped while rewriting it), or when it does not decode, which is added to corrupt.
func readJSONFile[T any](dir, name string, corrupt *[]CorruptLine) (*T, error) {
	path := filepath.Join(dir, name)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && len(bytes.TrimSpace(data)) == 0):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	var v T
	if json.Unmarshal(data, &v) != nil {
		*corrupt = append(*corrupt, CorruptLine{File: path, Line: 1})
		return nil, nil
	}
	return &v, nil
}

// dropSelfTest removes the records of netd's own self-test, made before the agent started.
func (h *Harvest) dropSelfTest() {
	dns := h.DNS[:0]
	for _, r := range h.DNS {
		r.Name = strings.TrimSuffix(r.Name, ".")
		if r.Name != policy.SelfTestName {
			dns = append(dns, r)
		}
	}
	h.DNS = dns
	conns := h.Conns[:0]
	for _, r := range h.Conns {
		if r.Name != policy.SelfTestName {
			conns = append(conns, r)
		}
	}
	h.Conns = conns
	if h.Stats == nil {
		return
	}
	for log, st := range h.Stats.Logs {
		names := st.Denied[:0]
		for _, d := range st.Denied {
			if log == policy.DNSLog {
				d.Name = strings.TrimSuffix(d.Name, ".")
			}
			if d.Name != policy.SelfTestName {
				names = append(names, d)
			}
		}
		st.Denied = names
		h.Stats.Logs[log] = st
	}
}

// decodeLog decodes the lines of a decision log into dst, except its truncation line, which
// goes to marks.
func decodeLog[T any](dst *[]T, file string, marks map[string]policy.Truncation) func([]byte) error {
	record := decodeInto(dst)
	return func(line []byte) error {
		if bytes.Contains(line, []byte(`"truncated":true`)) {
			var m policy.Truncation
			if json.Unmarshal(line, &m) == nil && m.Truncated {
				marks[file] = m
				return nil
			}
		}
		return record(line)
	}
}

func decodeInto[T any](dst *[]T) func([]byte) error {
	return func(line []byte) error {
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		*dst = append(*dst, v)
		return nil
	}
}

// NameCount is a name and how often it was seen.
type NameCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// DeniedNames returns the names the agent looked up and was refused, most frequent first: those
// of the log, and those netd counted past the log's cap.
func (h *Harvest) DeniedNames() []NameCount {
	counts := map[string]int{}
	for _, r := range h.DNS {
		if r.Verdict == policy.Denied {
			counts[r.Name] += int(r.Decisions())
		}
	}
	h.countDenied(counts, policy.DNSLog, func(name string) string { return name })
	return sortCounts(counts)
}

// RefusedConnections returns the server names (SNI or Host) of connections netd refused, most
// frequent first, past the log's cap too. A connection without a name counts as "(no name)".
func (h *Harvest) RefusedConnections() []NameCount {
	counts := map[string]int{}
	for _, r := range h.Conns {
		if r.Verdict == policy.Denied {
			counts[connName(r.Name)] += int(r.Decisions())
		}
	}
	h.countDenied(counts, policy.ConnLog, connName)
	return sortCounts(counts)
}

// EncryptedHellos returns the outer server names of the TLS connections netd refused because
// their ClientHello carried an encrypted one ([policy.ReasonECH]), most frequent first: the
// server asked for was inside, where netd cannot read it. They are among
// [Harvest.RefusedConnections] too; only those the log kept are counted.
func (h *Harvest) EncryptedHellos() []NameCount {
	counts := map[string]int{}
	for _, r := range h.Conns {
		if r.Verdict == policy.Denied && r.Reason == policy.ReasonECH {
			counts[connName(r.Name)] += int(r.Decisions())
		}
	}
	return sortCounts(counts)
}

func connName(name string) string {
	if name == "" {
		return "(no name)"
	}
	return name
}

// countDenied adds the denied names netd counted for log. netd counts every denial of a name
// from its first, so its count stands unless the log shows more (statistics from a snapshot
// older than the log's end).
func (h *Harvest) countDenied(counts map[string]int, log string, name func(string) string) {
	if h.Stats == nil {
		return
	}
	for _, d := range h.Stats.Logs[log].Denied {
		n := name(d.Name)
		counts[n] = max(counts[n], int(d.Count))
	}
}

// Dropped returns the packets the ruleset rejected or dropped, or -1 when unknown.
func (h *Harvest) Dropped() int64 {
	if h.Counters == nil {
		return -1
	}
	return h.Counters.DroppedPkts
}

// ToolCalls returns the MCP tool calls netd forwarded or refused ([ToolCalls]).
func (h *Harvest) ToolCalls() []policy.MCPRecord { return ToolCalls(h.MCP) }

// ToolCalls returns the tool calls among MCP records, in order: the requests that reach a
// server's tool, which a run's summary lists; the session's other requests (initialize,
// tools/list) do not.
func ToolCalls(records []policy.MCPRecord) []policy.MCPRecord {
	var out []policy.MCPRecord
	for _, r := range records {
		if r.Method == "tools/call" {
			out = append(out, r)
		}
	}
	return out
}

// ToolCallVerdicts counts calls by netd's verdict, in the order allowed, denied, error; a
// verdict no call had is left out.
func ToolCallVerdicts(calls []policy.MCPRecord) []NameCount {
	n := map[string]int{}
	for _, r := range calls {
		n[r.Verdict]++
	}
	var out []NameCount
	for _, v := range []string{policy.Allowed, policy.Denied, policy.Error} {
		if n[v] > 0 {
			out = append(out, NameCount{Name: v, Count: n[v]})
		}
	}
	return out
}

func sortCounts(m map[string]int) []NameCount {
	out := make([]NameCount, 0, len(m))
	for k, v := range m {
		out = append(out, NameCount{Name: k, Count: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out
}
