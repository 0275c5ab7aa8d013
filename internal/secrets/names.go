package secrets

import (
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/termtext"
)

// ParseName returns the secret name a person typed, trimmed, or why the store could not hold a
// secret of that name (the rule the store checks, [manifest.IsSecretName]).
func ParseName(s string) (string, error) {
	name := strings.TrimSpace(s)
	if !manifest.IsSecretName(name) {
		return "", fmt.Errorf("%q is not a secret name (A-Z a-z 0-9 . _ -, starting with a letter or digit)", termtext.Line(s))
	}
	return name, nil
}
