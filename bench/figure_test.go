//go:build bench

package bench

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Stat
	}{
		{[]float64{3, 1, 2}, Stat{Min: 1, Median: 2, Max: 3, N: 3}},
		{[]float64{4, 1, 3, 2}, Stat{Min: 1, Median: 2.5, Max: 4, N: 4}},
		{[]float64{7}, Stat{Min: 7, Median: 7, Max: 7, N: 1}},
	} {
		if got := Summarize(c.in); got != c.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
	if s := Summarize(nil); !math.IsNaN(s.Median) || s.N != 0 {
		t.Errorf("Summarize(nil) = %+v, want NaNs and N 0", s)
	}
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 {
		t.Errorf("Summarize sorted its argument: %v", in)
	}
}

// The ratio is taken per pair, then summarised: a slow moment that hits both sides of a pair
// cancels, which the ratio of the two medians would not show.
func TestNewFigurePairs(t *testing.T) {
	a := NewSeries("abox", []float64{2, 4, 30})
	b := NewSeries("floor", []float64{1, 2, 20})
	f := NewFigure("x", "t", "s", a, b, &Target{"ratio<=", 1.5})
	if want := (Stat{Min: 1.5, Median: 2, Max: 2, N: 3}); f.Ratio != want {
		t.Errorf("ratio = %+v, want %+v", f.Ratio, want)
	}
	if want := (Stat{Min: 1, Median: 2, Max: 10, N: 3}); f.Diff != want {
		t.Errorf("diff = %+v, want %+v", f.Diff, want)
	}
	if f.Met == nil || *f.Met {
		t.Errorf("met = %v, want false for a median ratio of 2 against ≤ 1.5", f.Met)
	}
	for _, c := range []struct {
		target Target
		met    bool
	}{
		{Target{"ratio<=", 2}, true},
		{Target{"ratio>=", 2.1}, false},
		{Target{"ratio>=", 0.9}, true},
		{Target{"diff<=", 1}, false},
		{Target{"diff<=", 2}, true},
	} {
		f := NewFigure("x", "t", "s", a, b, &c.target)
		if *f.Met != c.met {
			t.Errorf("%s: met = %v, want %v", c.target, *f.Met, c.met)
		}
	}
}

func TestFigureRoundTrip(t *testing.T) {
	dir := t.TempDir()
	f := NewFigure("2-b", "title", "ms", NewSeries("a", []float64{1, 2}), NewSeries("b", []float64{1, 1}), nil)
	f.Parts = []Part{{Name: "phase", Stat: Summarize([]float64{0.5}), Unit: "s"}}
	f.Note("a note")
	g := NewFigure("1-a", "first", "s", NewSeries("a", []float64{1}), NewSeries("b", []float64{2}), &Target{"ratio>=", 0.9})
	for _, x := range []*Figure{f, g} {
		if err := x.Write(dir); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadFigures(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*Figure{g, f}, got); diff != "" {
		t.Errorf("figures read back in file-name order (-want +got):\n%s", diff)
	}
}
