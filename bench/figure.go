//go:build bench

package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// Stat summarises samples as the figures are reported: min, median and max.
type Stat struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize returns the [Stat] of samples; the median of an even count is the mean of the two
// middle samples.
func Summarize(samples []float64) Stat {
	if len(samples) == 0 {
		return Stat{Min: math.NaN(), Median: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	mid := len(s) / 2
	med := s[mid]
	if len(s)%2 == 0 {
		med = (s[mid-1] + s[mid]) / 2
	}
	return Stat{Min: s[0], Median: med, Max: s[len(s)-1], N: len(s)}
}

// Series is one side of a comparison: what was measured and its samples, in the order taken.
type Series struct {
	Label   string    `json:"label"`
	Samples []float64 `json:"samples"`
	Stat    Stat      `json:"stat"`
}

// NewSeries summarises samples under label.
func NewSeries(label string, samples []float64) Series {
	return Series{Label: label, Samples: samples, Stat: Summarize(samples)}
}

// Part is one named component of a figure, such as a phase of a run, in the figure's unit
// unless it names its own.
type Part struct {
	Name string `json:"name"`
	Stat Stat   `json:"stat"`
	Unit string `json:"unit,omitempty"`
}

// Target is what a figure should meet, checked on the median: Ratio (abox ÷ baseline) at most
// or at least Value, or Diff (abox − baseline) at most Value.
type Target struct {
	Kind  string  `json:"kind"` // "ratio<=", "ratio>=", "diff<="
	Value float64 `json:"value"`
}

func (t Target) String() string {
	switch t.Kind {
	case "ratio<=":
		return fmt.Sprintf("≤ %.2f×", t.Value)
	case "ratio>=":
		return fmt.Sprintf("≥ %.2f×", t.Value)
	case "diff<=":
		return fmt.Sprintf("≤ +%g", t.Value)
	}
	return ""
}

// Figure is one reported comparison: abox's path (A) against the floor (B), measured
// alternately in one run. Ratio and Diff are taken per pair (A_i ÷ B_i, A_i − B_i) and then
// summarised, so that a slow moment of the machine hits both sides of a pair.
type Figure struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Unit    string   `json:"unit"`
	A       Series   `json:"a"`
	B       Series   `json:"b"`
	Ratio   Stat     `json:"ratio"`
	Diff    Stat     `json:"diff"`
	Target  *Target  `json:"target,omitempty"`
	Met     *bool    `json:"met,omitempty"`
	Parts   []Part   `json:"parts,omitempty"`
	Command string   `json:"command"`
	Notes   []string `json:"notes,omitempty"`
}

// NewFigure pairs a and b sample by sample and checks the target, if any.
func NewFigure(id, title, unit string, a, b Series, target *Target) *Figure {
	f := &Figure{ID: id, Title: title, Unit: unit, A: a, B: b, Target: target}
	var ratios, diffs []float64
	for i := range min(len(a.Samples), len(b.Samples)) {
		ratios = append(ratios, a.Samples[i]/b.Samples[i])
		diffs = append(diffs, a.Samples[i]-b.Samples[i])
	}
	f.Ratio, f.Diff = Summarize(ratios), Summarize(diffs)
	if target != nil {
		var met bool
		switch target.Kind {
		case "ratio<=":
			met = f.Ratio.Median <= target.Value
		case "ratio>=":
			met = f.Ratio.Median >= target.Value
		case "diff<=":
			met = f.Diff.Median <= target.Value
		}
		f.Met = &met
	}
	return f
}

// Note adds a line of explanation to the figure.
func (f *Figure) Note(format string, args ...any) *Figure {
	f.Notes = append(f.Notes, fmt.Sprintf(format, args...))
	return f
}

// Write stores the figure as dir/<id>.json.
func (f *Figure) Write(dir string) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, f.ID+".json"), append(b, '\n'), 0o644)
}

// ReadFigures reads every figure stored in dir, in file-name order.
func ReadFigures(dir string) ([]*Figure, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Figure
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var f Figure
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, &f)
	}
	return out, nil
}
