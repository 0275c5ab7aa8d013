package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCustomServersShape: both shapes decode, and a problem is reported against the shape the
// file has.
func TestCustomServersShape(t *testing.T) {
	const digest = "@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	pinned := CustomServer{Image: "example.test/mcp/a" + digest}
	tests := []struct {
		name string
		data string
		want CustomServers
		errs []string
	}{
		{"bare", "a: {image: example.test/mcp/a" + digest + "}\n", CustomServers{"a": pinned}, nil},
		{"under servers", "servers:\n  a: {image: example.test/mcp/a" + digest + "}\n", CustomServers{"a": pinned}, nil},
		{"bare server named servers", "servers: {image: example.test/mcp/a" + digest + "}\n", CustomServers{"servers": pinned}, nil},
		{"empty under servers", "servers: {}\n", CustomServers{}, nil},
		{"null under servers", "servers:\n", nil, nil},
		{"empty file", "", nil, nil},
		{"typo under servers", "servers:\n  a: {imag: x}\n", nil, []string{`line 2: "imag" is not a known key`}},
		{"typo in bare", "a: {imag: x}\n", nil, []string{`line 1: "imag" is not a known key`}},
		{"servers beside a server", "servers: {a: {image: x}}\nb: {image: y}\n", nil, []string{
			`line 1: "a" is not a known key`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCustomServers([]byte(tc.data), "custom-servers.yaml")
			if diff := cmp.Diff(tc.errs, lines(t, err)); diff != "" {
				t.Fatalf("ParseCustomServers(%q) problems mismatch (-want +got):\n%s", tc.data, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseCustomServers(%q) mismatch (-want +got):\n%s", tc.data, diff)
			}
		})
	}
}
