package sandbox

import (
	"testing"
	"time"
)

func TestClockPhasesAddUp(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	out := &Outcome{}
	c := &clock{now: func() time.Time { return now }, last: t0, out: out}
	now = now.Add(2 * time.Second)
	c.mark("a")
	c.markAt("b", t0.Add(3*time.Second)) // a moment seen earlier than now
	now = now.Add(2 * time.Second)
	c.markAt("c", t0) // before the last mark: an empty phase, never a negative one
	c.mark("d")
	want := []Phase{{"a", 2 * time.Second}, {"b", time.Second}, {"c", 0}, {"d", time.Second}}
	if len(out.Phases) != len(want) {
		t.Fatalf("phases = %v, want %v", out.Phases, want)
	}
	var sum time.Duration
	for i, p := range out.Phases {
		if p != want[i] {
			t.Errorf("phase %d = %v, want %v", i, p, want[i])
		}
		sum += p.Dur
	}
	if sum != now.Sub(t0) {
		t.Errorf("phases add up to %v, want %v", sum, now.Sub(t0))
	}
}
