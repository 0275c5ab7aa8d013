package cli

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
)

// TestMaskFailure: a run fails when its agent put something in a mask's place, not when
// masked content only moved ([sandbox.Outcome.FailedMasks] counts them).
func TestMaskFailure(t *testing.T) {
	moved := telemetry.MaskEvent{Mask: "config/master.key", Kind: telemetry.MaskMoved, Original: "config.moved/master.key"}
	planted := telemetry.MaskEvent{Mask: ".git/hooks", Kind: telemetry.MaskPlanted, Planted: ".git/hooks", PlantedType: "directory"}
	for _, tc := range []struct {
		events []telemetry.MaskEvent
		fails  bool
	}{{nil, false}, {[]telemetry.MaskEvent{moved}, false}, {[]telemetry.MaskEvent{moved, planted}, true}} {
		rep := &launch.Report{Outcome: &sandbox.Outcome{ID: "r1", MaskEvents: tc.events}}
		err := remedy.Verdict(rep.Verdict())
		if (err != nil) != tc.fails || (err != nil && !strings.Contains(hintOf(err), "`abox doctor` names the quarantine")) {
			t.Errorf("verdict(%v) = %v (hint %q), want failing %v", tc.events, err, hintOf(err), tc.fails)
		}
	}
}
