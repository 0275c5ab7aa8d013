package telemetry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ids(runs []RunRecord) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func TestNewest(t *testing.T) {
	runs := []RunRecord{{ID: "r1"}, {ID: "r2"}, {ID: "r3"}}
	if got, want := ids(Newest(runs, 2)), []string{"r3", "r2"}; !cmp.Equal(got, want) {
		t.Errorf("Newest(2) = %v, want %v", got, want)
	}
	if got, want := ids(Newest(runs, 10)), []string{"r3", "r2", "r1"}; !cmp.Equal(got, want) {
		t.Errorf("Newest(10) = %v, want %v", got, want)
	}
}

func TestHarvestsSkipsUnreadableRuns(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "r1", "netd"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "r1", "netd"), "dns.jsonl", `{"ts":"t1","name":"a.example.com","type":"A","verdict":"deny"}`+"\n")
	if err := os.MkdirAll(filepath.Join(dir, "r2"), 0o700); err != nil {
		t.Fatal(err)
	}
	// r2's harvest cannot be read: its netd directory is a file.
	write(t, filepath.Join(dir, "r2"), "netd", "not a directory")
	hs := Harvests([]RunRecord{{ID: "r1", RunDir: filepath.Join(dir, "r1")}, {ID: "r2", RunDir: filepath.Join(dir, "r2")}})
	if len(hs) != 1 || hs[0].Run.ID != "r1" || len(hs[0].DNS) != 1 || hs[0].DNS[0].Name != "a.example.com" {
		t.Errorf("Harvests = %+v, want r1's one DNS record only", hs)
	}
}

func TestFindTranscript(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.jsonl")
	write(t, dir, "t.jsonl", "{}\n")
	runs := []RunRecord{{ID: "20260101-aaaa", Transcript: "/old"}, {ID: "20260101-aaab", Transcript: "/new"}, {ID: "20260102-bbbb"}}
	for _, tc := range []struct{ arg, want string }{
		{file, file},              // a path
		{"20260101-aaaa", "/old"}, // an id
		{"20260101", "/new"},      // a prefix: the newest run that has one
		{"20260102-bbbb", ""},     // a run without a transcript
		{"nothing-like-it", ""},
	} {
		if got := FindTranscript(runs, tc.arg); got != tc.want {
			t.Errorf("FindTranscript(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
}

func TestScanTranscript(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 1<<20) // past bufio's default 64 KiB line
	write(t, dir, "t.jsonl", "one\n"+long+"\nthree\n")
	var got []int
	if err := ScanTranscript(filepath.Join(dir, "t.jsonl"), func(l []byte) error { got = append(got, len(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 1 << 20, 5}; !cmp.Equal(got, want) {
		t.Errorf("line lengths = %v, want %v", got, want)
	}
	stop := errors.New("stop")
	n := 0
	if err := ScanTranscript(filepath.Join(dir, "t.jsonl"), func([]byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("ScanTranscript did not stop at fn's error: err %v after %d lines", err, n)
	}
	if err := ScanTranscript(filepath.Join(dir, "missing"), func([]byte) error { return nil }); err == nil {
		t.Error("ScanTranscript of a missing file succeeded")
	}
}

func TestTranscriptJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type": "result",` + "\r\n" + ` "n": 1}`, `{"type":"result","n":1}` + "\n"},
		{"plain <text> & more", `"plain <text> & more"` + "\n"},
		{"bell\x07", `"bell\u0007"` + "\n"},
	} {
		if got := string(TranscriptJSON([]byte(tc.in))); got != tc.want {
			t.Errorf("TranscriptJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
