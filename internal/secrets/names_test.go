package secrets

import (
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	if got, err := ParseName(" Claude_key.2 "); err != nil || got != "Claude_key.2" {
		t.Errorf("ParseName = %q, %v", got, err)
	}
	for _, bad := range []string{"", "../key", "a b", "-x", "x\ny"} {
		got, err := ParseName(bad)
		if err == nil || !strings.Contains(err.Error(), "is not a secret name") {
			t.Errorf("ParseName(%q) = %q, %v; want an error", bad, got, err)
		} else if strings.ContainsAny(err.Error(), "\n") {
			t.Errorf("ParseName(%q): the message carries a control: %q", bad, err)
		}
	}
}
