//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// TestRunFinishesAndRetiresNetd: a run's netd is finished (it writes its counters and says so)
// rather than stopped, its logs are harvested before the run returns, and its container is
// removed by the after-run process once the run has returned; a netd left on the retire list by
// an earlier after-run process that did not get to it (here: a container of the test's own,
// named as a netd) is removed by the next one. Nothing of the run's audit trail depends on the
// removal: the record is whole when abox run returns.
func TestRunFinishesAndRetiresNetd(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(h.DefaultConfig())
	h.WriteManifest("version: 1\nproject: retire\nprofile: " + h.Profile + "\n")
	mustAbox(t, h, "up", "--yes")

	left := "abox-netd-retire-left-" + h.ID
	args := []string{"run", "-d", "--name", left}
	for k, v := range h.Labels() {
		args = append(args, "--label", k+"="+v)
	}
	h.MustDocker(append(args, "--entrypoint", "/bin/sleep", harness.BaseImageID(t), "600")...)
	list := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "retired-netd")
	if err := os.WriteFile(list, []byte(left+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	res := h.Abox("run", `getent hosts retire-marker.invalid; echo done`) // waits for the after-run process
	if !res.OK() {
		t.Fatalf("run: %s", res)
	}
	rec := lastRunRecord(t, h)
	for _, n := range rec.Notes {
		if strings.Contains(n, "netd") {
			t.Errorf("run note %q: want netd finished and harvested without a word", n)
		}
	}
	if rec.DeniedDomains != 1 || rec.DroppedPackets < 0 {
		t.Errorf("run record: %d denied names, dropped packets %d; want the marker's denial and counters harvested", rec.DeniedDomains, rec.DroppedPackets)
	}
	phases, err := os.ReadFile(filepath.Join(rec.RunDir, "phases.json"))
	if err != nil || !strings.Contains(string(phases), `"netd finish"`) {
		t.Errorf("phases.json = %s (%v); want a netd finish phase", phases, err)
	}
	events, err := os.ReadFile(filepath.Join(rec.RunDir, "netd", "netd.jsonl"))
	if err != nil || !strings.Contains(string(events), `"event":"finished"`) {
		t.Errorf("netd.jsonl = %s (%v); want its finished event harvested", events, err)
	}
	names := strings.Fields(h.Docker("ps", "-a", "--format", "{{.Names}}").Stdout)
	for _, gone := range []string{"abox-netd-retire-" + rec.ID, "agent-retire-" + rec.ID, left} {
		if slices.Contains(names, gone) {
			t.Errorf("container %s still exists once the after-run process is done", gone)
		}
	}
	if _, err := os.Stat(list); !os.IsNotExist(err) {
		t.Errorf("the retire list is still there: %v", err)
	}
}
