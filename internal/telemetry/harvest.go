package telemetry

import (
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
	Events   []policy.Event
	Counters *policy.Counters // nil when netd died before writing them
	Corrupt  []CorruptLine
}

// ReadHarvest reads the netd logs copied into dir.
func ReadHarvest(dir string) (*Harvest, error) {
	h := &Harvest{}
	files := []struct {
		name string
		fn   func([]byte) error
	}{
		{policy.DNSLog, decodeInto(&h.DNS)},
		{policy.ConnLog, decodeInto(&h.Conns)},
		{policy.MCPLog, decodeInto(&h.MCP)},
		{policy.EventLog, decodeInto(&h.Events)},
	}
	for _, f := range files {
		bad, err := readLines(filepath.Join(dir, f.name), f.fn)
		if err != nil {
			return nil, err
		}
		h.Corrupt = append(h.Corrupt, bad...)
	}
	h.dropSelfTest()
	data, err := os.ReadFile(filepath.Join(dir, policy.CountersLog))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading counters: %w", err)
	default:
		var c policy.Counters
		if json.Unmarshal(data, &c) == nil {
			h.Counters = &c
		} else {
			h.Corrupt = append(h.Corrupt, CorruptLine{File: filepath.Join(dir, policy.CountersLog), Line: 1})
		}
	}
	return h, nil
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

// DeniedNames returns the names the agent looked up and was refused, most frequent first.
func (h *Harvest) DeniedNames() []NameCount {
	counts := map[string]int{}
	for _, r := range h.DNS {
		if r.Verdict == policy.Denied {
			counts[r.Name]++
		}
	}
	return sortCounts(counts)
}

// RefusedConnections returns the server names (SNI or Host) of connections netd refused, most
// frequent first. A connection without a name counts as "(no name)".
func (h *Harvest) RefusedConnections() []NameCount {
	counts := map[string]int{}
	for _, r := range h.Conns {
		if r.Verdict == policy.Denied {
			name := r.Name
			if name == "" {
				name = "(no name)"
			}
			counts[name]++
		}
	}
	return sortCounts(counts)
}

// Dropped returns the packets the ruleset rejected or dropped, or -1 when unknown.
func (h *Harvest) Dropped() int64 {
	if h.Counters == nil {
		return -1
	}
	return h.Counters.DroppedPkts
}

// ToolCalls returns the MCP tool calls netd forwarded or refused.
func (h *Harvest) ToolCalls() []policy.MCPRecord {
	var out []policy.MCPRecord
	for _, r := range h.MCP {
		if r.Method == "tools/call" {
			out = append(out, r)
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
