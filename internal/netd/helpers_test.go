package netd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a jsonl.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// logRecords decodes every JSON line written so far into T.
func logRecords[T any](t *testing.T, s *syncBuffer) []T {
	t.Helper()
	var out []T
	for _, line := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if line == "" {
			continue
		}
		var v T
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// waitRecords polls until the log holds n records, and returns them.
func waitRecords[T any](t *testing.T, s *syncBuffer, n int) []T {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := logRecords[T](t, s)
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) < n {
				t.Fatalf("log holds %d records, want %d:\n%s", len(got), n, s)
			}
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeSets records set requests instead of asking a supervisor.
type fakeSets struct {
	mu   sync.Mutex
	reqs []setRequest
	err  error
}

func (f *fakeSets) addElements(_ context.Context, r setRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	return f.err
}

func (f *fakeSets) requests() []setRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]setRequest(nil), f.reqs...)
}

// testConfig builds a config from a policy with the given egress entries and MCP section, and
// an optional gateway address.
func testConfig(t testing.TB, egress []string, mcp *policy.MCP, token string, gateway ...string) *current {
	t.Helper()
	p := policy.Netd{Version: policy.Version, Project: "test", Egress: egress, MCP: mcp}
	cfg, err := newConfig(p.Marshal(), token, "", strings.Join(gateway, ""))
	if err != nil {
		t.Fatal(err)
	}
	var c current
	c.set(cfg)
	return &c
}

var errFake = errors.New("fake failure")
