package telemetry

import (
	"strings"
	"testing"
)

func TestReviewWriteText(t *testing.T) {
	r := &Review{
		Allowed: []Allowed{{Entry: "api.example.com"}, {Entry: "m.example.com", Mandatory: true}},
		Ignored: []string{"bad\x1b[31m.example"},
		Queue:   []QueueItem{{Name: "evil\x07.example", Kind: DeniedConn, Count: 3, Runs: 2, LastSeen: "t1"}, {Name: "q.example", Count: 1, Runs: 1, LastSeen: "t0"}},
	}
	var b strings.Builder
	r.WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"allowed:\n  api.example.com\n  m.example.com  (mandatory)\nignored:\n",
		"connected to", "looked up", "review queue (denied, newest first):\n  NAME",
		"  ↳ allow with `abox egress add <host>`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("agent-written control bytes printed raw:\n%q", out)
	}

	b.Reset()
	(&Review{Ignored: []string{}}).WriteText(&b)
	if got, want := b.String(), "allowed:\nignored:\n  none\nreview queue (denied, newest first):\n  empty\n"; got != want {
		t.Errorf("empty review = %q, want %q", got, want)
	}
}
