package egress

import (
	"slices"
	"testing"
)

func TestParseHosts(t *testing.T) {
	got, err := ParseHosts(" Example.COM., *.b.test  c.test:22,d.test ")
	want := []string{"example.com", "*.b.test", "c.test:22", "d.test"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseHosts = %q, %v; want %q", got, err, want)
	}
	if got, err := ParseHosts("  "); err != nil || got != nil {
		t.Errorf("ParseHosts(blank) = %q, %v", got, err)
	}
	for _, bad := range []string{"ok.test 10.0.0.1", "ok.test localhost", "a..b"} {
		if got, err := ParseHosts(bad); err == nil {
			t.Errorf("ParseHosts(%q) = %q, want an error", bad, got)
		}
	}
}
