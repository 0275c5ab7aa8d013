package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
)

// TestMaskEventsInTheSummary: a run whose agent put something in a mask's place prints it,
// escaped, with what to do, and fails; content that only moved is printed and does not fail.
func TestMaskEventsInTheSummary(t *testing.T) {
	moved := telemetry.MaskEvent{Mask: "config/master.key", Kind: telemetry.MaskMoved, Original: "config.moved/master.key"}
	planted := telemetry.MaskEvent{Mask: ".git/hooks", Kind: telemetry.MaskPlanted, Planted: ".git/hooks", PlantedType: "directory",
		Quarantine: "/state/q/1-hooks", Original: ".git.moved\x1b[2J/hooks"}
	for _, tc := range []struct {
		name   string
		events []telemetry.MaskEvent
		want   []string
		fails  bool
	}{
		{"moved", []telemetry.MaskEvent{moved}, []string{"mask moved: config/master.key; the masked content is now at config.moved/master.key"}, false},
		{"planted", []telemetry.MaskEvent{moved, planted}, []string{
			"mask replaced: .git/hooks holds a directory the agent put there; abox moved it to /state/q/1-hooks",
			`.git.moved\x1b[2J/hooks`, "↳ review what abox moved aside"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printMaskEvents(&b, tc.events)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			if strings.Contains(b.String(), "\x1b") {
				t.Errorf("the summary prints a raw escape from a workspace name:\n%q", b.String())
			}
			err := maskFailure(&sandbox.Outcome{ID: "r1", MaskEvents: tc.events})
			if (err != nil) != tc.fails {
				t.Errorf("maskFailure = %v, want failing %v", err, tc.fails)
			}
		})
	}
}
