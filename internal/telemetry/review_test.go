package telemetry

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/policy"
)

func TestReadReview(t *testing.T) {
	path := filepath.Join(t.TempDir(), "denied.jsonl")
	h := &Harvest{DNS: []policy.DNSRecord{
		{Name: "new.example.com", Verdict: policy.Denied},
		{Name: "api.allowed.com", Verdict: policy.Denied}, // denied then, allowed now
		{Name: "x.tracker.example", Verdict: policy.Denied},
	}}
	if err := AppendDenials(path, "r1", "2026-11-01T00:00:00Z", h); err != nil {
		t.Fatal(err)
	}
	pol := &policy.Netd{Version: policy.Version, Egress: []string{"api.allowed.com", "claude.ai"}, Mandatory: []string{"claude.ai"}, DefaultPorts: []int{443}}
	rep, bad, err := ReadReview(path, pol, []string{"*.tracker.example"})
	if err != nil || len(bad) != 0 {
		t.Fatalf("ReadReview() = %v, %v", bad, err)
	}
	want := &Review{
		Allowed: []Allowed{{Entry: "api.allowed.com"}, {Entry: "claude.ai", Mandatory: true}},
		Ignored: []string{"*.tracker.example"},
		Queue:   []QueueItem{{Name: "new.example.com", Kind: DeniedDNS, Count: 1, Runs: 1, LastSeen: "2026-11-01T00:00:00Z"}},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("ReadReview() mismatch (-want +got):\n%s", diff)
	}
	// Without denials or ignored hosts, the lists are empty, never null in --json.
	empty, _, err := ReadReview(filepath.Join(t.TempDir(), "none.jsonl"), pol, nil)
	if err != nil || empty.Ignored == nil || empty.Queue == nil || len(empty.Queue) != 0 {
		t.Errorf("ReadReview() without data = %+v, %v; want empty, non-nil lists", empty, err)
	}
}
