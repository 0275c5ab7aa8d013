package cli

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/sandbox"
)

// TestNotLoggedInHint: the login check's refusal ([sandbox.ErrNotLoggedIn]) gets the `abox
// shell` hint, and exit 1: the sandbox is sound, Claude Code is not logged in.
func TestNotLoggedInHint(t *testing.T) {
	code, hint := exitStatus(&sandbox.NotLoggedInError{Volume: "abox-claude-0123456789ab"})
	if code != ExitError || !strings.Contains(hint, "abox shell") {
		t.Errorf("exitStatus(not logged in) = %d, %q; want %d and the abox shell hint", code, hint, ExitError)
	}
	if code, hint := exitStatus(sandbox.ErrNoLoginCheck); code != ExitBoundary || !strings.Contains(hint, "abox up") {
		t.Errorf("exitStatus(no login check) = %d, %q; want %d and the abox up hint", code, hint, ExitBoundary)
	}
}

func TestCheckResume(t *testing.T) {
	for _, tc := range []struct {
		opts runOptions
		ok   bool
	}{
		{runOptions{}, true},
		{runOptions{cont: true}, true},
		{runOptions{resume: "2f0c7a4e-1b2d-4c3e-9f00-0a1b2c3d4e5f"}, true},
		{runOptions{resume: "--dangerously-skip-permissions"}, false},
		{runOptions{resume: "a b"}, false},
		{runOptions{resume: "abc", cont: true}, false},
	} {
		if err := checkResume(tc.opts); (err == nil) != tc.ok {
			t.Errorf("checkResume(%+v) = %v, want ok %v", tc.opts, err, tc.ok)
		}
	}
}
