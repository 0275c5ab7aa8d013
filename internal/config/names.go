package config

import (
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/manifest"
)

// ParseProfileName returns the profile name a person typed, trimmed, or why it cannot name a
// profile (the rule config.yaml's profiles are checked by, [manifest.IsProjectName]).
func ParseProfileName(s string) (string, error) {
	name := strings.TrimSpace(s)
	if !manifest.IsProjectName(name) {
		return "", fmt.Errorf("%q is not a valid profile name (a-z 0-9 . _ -)", s)
	}
	return name, nil
}
