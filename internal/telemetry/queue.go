package telemetry

import (
	"encoding/json"
	"sort"

	"github.com/aboxhq/abox/internal/statefs"
)

// Kinds of denial in the review queue. DNS denials are names looked up; connection refusals are
// names the agent actually connected to, a stronger signal.
const (
	DeniedDNS  = "dns"
	DeniedConn = "conn"
)

// Denial is one row of denied.jsonl: a name denied during a run, with its count.
type Denial struct {
	Run   string `json:"run"`
	TS    string `json:"ts"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// AppendDenials records a run's denials in the project's denied.jsonl.
func AppendDenials(path, run, ts string, h *Harvest) error {
	for _, set := range []struct {
		kind  string
		names []NameCount
	}{{DeniedDNS, h.DeniedNames()}, {DeniedConn, h.RefusedConnections()}} {
		for _, n := range set.names {
			b, err := json.Marshal(Denial{Run: run, TS: ts, Kind: set.kind, Name: n.Name, Count: n.Count})
			if err != nil {
				return err
			}
			if err := statefs.AppendLine(path, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// QueueItem is one name in the review queue.
type QueueItem struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // dns or conn
	Count    int    `json:"count"`
	Runs     int    `json:"runs"`
	LastSeen string `json:"last_seen"`
}

// Queue reads denied.jsonl and returns, per kind and name, the total count, the number of runs
// and the last time it was seen, newest first. skip drops names already decided (allowed now, or
// ignored).
func Queue(path string, skip func(name string) bool) ([]QueueItem, []CorruptLine, error) {
	type key struct{ kind, name string }
	items := map[key]*QueueItem{}
	runs := map[key]map[string]bool{}
	bad, err := readLines(path, func(line []byte) error {
		var d Denial
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		if skip != nil && skip(d.Name) {
			return nil
		}
		k := key{d.Kind, d.Name}
		it := items[k]
		if it == nil {
			it = &QueueItem{Name: d.Name, Kind: d.Kind}
			items[k], runs[k] = it, map[string]bool{}
		}
		it.Count += d.Count
		runs[k][d.Run] = true
		if d.TS > it.LastSeen {
			it.LastSeen = d.TS
		}
		return nil
	})
	out := make([]QueueItem, 0, len(items))
	for k, it := range items {
		it.Runs = len(runs[k])
		out = append(out, *it)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].LastSeen != out[j].LastSeen {
			return out[i].LastSeen > out[j].LastSeen
		}
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out, bad, err
}
