package config

import (
	"strings"
	"testing"
)

func TestParseProfileName(t *testing.T) {
	if got, err := ParseProfileName("  work-2 "); err != nil || got != "work-2" {
		t.Errorf("ParseProfileName = %q, %v", got, err)
	}
	for _, bad := range []string{"", "Work", "a b", "../x", strings.Repeat("a", 65)} {
		if got, err := ParseProfileName(bad); err == nil || !strings.Contains(err.Error(), "is not a valid profile name") {
			t.Errorf("ParseProfileName(%q) = %q, %v; want an error", bad, got, err)
		}
	}
}
