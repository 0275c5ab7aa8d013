package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/statefs"
)

// Baseline is the project's baselines.json: the git and watch fingerprints accepted last, each
// with the time it was recorded. It lives in abox's state directory, out of the agent's reach,
// and is written atomically with mode 0600. The two sections are updated independently and
// never clobber each other. A section was recorded when its timestamp is set; its map may be
// empty.
type Baseline struct {
	Git     map[string]string `json:"git,omitempty"`
	GitTS   string            `json:"git_ts,omitempty"`
	Watch   map[string]string `json:"watch,omitempty"`
	WatchTS string            `json:"watch_ts,omitempty"`
}

// LoadBaseline reads the baseline at path. A missing file is an empty baseline.
func LoadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Baseline{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading baselines: %w", err)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	return &b, nil
}

// UpdateBaseline reads the baseline at path, lets edit change it, and writes it back. A corrupt
// file is replaced.
func UpdateBaseline(path string, edit func(*Baseline)) error {
	b, err := LoadBaseline(path)
	if err != nil {
		b = &Baseline{}
	}
	edit(b)
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return statefs.WriteFile(path, append(data, '\n'), statefs.PrivateMode)
}

// Change is one difference between two fingerprints. Old is "" for something added, New is ""
// for something removed.
type Change struct {
	Name string `json:"name"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// Kind is "added", "removed" or "changed".
func (c Change) Kind() string {
	switch {
	case c.Old == "":
		return "added"
	case c.New == "":
		return "removed"
	}
	return "changed"
}

// Diff lists what differs between the fingerprints old and new, sorted by name.
func Diff(old, new map[string]string) []Change {
	var out []Change
	for k, v := range new {
		if o, ok := old[k]; !ok || o != v {
			out = append(out, Change{Name: k, Old: o, New: v})
		}
	}
	for k, v := range old {
		if _, ok := new[k]; !ok {
			out = append(out, Change{Name: k, Old: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Summarize describes at most n changes in one line, naming each with name(c.Name):
// "changed: a, b; added: c; and 2 more".
func Summarize(cs []Change, n int, name func(string) string) string {
	groups := map[string][]string{}
	for i, c := range cs {
		if i == n {
			break
		}
		groups[c.Kind()] = append(groups[c.Kind()], name(c.Name))
	}
	var parts []string
	for _, k := range []string{"changed", "added", "removed"} {
		if len(groups[k]) > 0 {
			parts = append(parts, k+": "+strings.Join(groups[k], ", "))
		}
	}
	s := strings.Join(parts, "; ")
	if len(cs) > n {
		s += fmt.Sprintf("; and %d more", len(cs)-n)
	}
	return s
}
