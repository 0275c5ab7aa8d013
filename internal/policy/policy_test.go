package policy

import (
	"strings"
	"testing"
)

func TestParseLogLimit(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		want  int64 // 0: refused
	}{
		{0, DefaultLogLimit},
		{MinLogLimit, MinLogLimit},
		{MaxLogLimit, MaxLogLimit},
		{MinLogLimit - 1, 0},
		{MaxLogLimit + 1, 0},
		{-1, 0},
	} {
		p := Netd{Version: Version, Project: "p", Egress: []string{}, LogLimit: tc.limit}
		got, err := Parse(p.Marshal())
		switch {
		case tc.want == 0 && (err == nil || !strings.Contains(err.Error(), "log limit")):
			t.Errorf("log limit %d: %v, want it refused", tc.limit, err)
		case tc.want != 0 && err != nil:
			t.Errorf("log limit %d: %v", tc.limit, err)
		case tc.want != 0 && got.LogLimitBytes() != tc.want:
			t.Errorf("log limit %d: %d bytes, want %d", tc.limit, got.LogLimitBytes(), tc.want)
		}
	}
}
