package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
)

// record records the workspace's masks as a run does.
func (f *fixture) recordMasks() {
	f.t.Helper()
	set, err := sandbox.FindMasks(f.ws, f.runSpec().Masks, nil, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := sandbox.SaveMaskRecord(f.project.MaskRecord(), set.Record()); err != nil {
		f.t.Fatal(err)
	}
}

// quarantine writes a run's quarantine as teardown does after the agent replaced .git/hooks.
func (f *fixture) quarantine(run string) string {
	f.t.Helper()
	dir := filepath.Join(f.project.Runs(), "20261129T100000Z-"+run, "quarantine")
	mkdir(f.t, filepath.Join(dir, "1-hooks"))
	ev := telemetry.MaskEvent{Mask: ".git/hooks", Kind: telemetry.MaskPlanted, Planted: ".git/hooks", PlantedType: "directory",
		Quarantine: filepath.Join(dir, "1-hooks"), Original: ".git.moved/hooks"}
	idx := fmt.Sprintf(`{"run":%q,"events":[{"mask":%q,"kind":%q,"planted":%q,"planted_type":"directory","quarantine":%q,"original":%q}]}`,
		run, ev.Mask, ev.Kind, ev.Planted, ev.Quarantine, ev.Original)
	if err := os.WriteFile(filepath.Join(dir, sandbox.QuarantineIndexName), []byte(idx), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return dir
}

// TestMasksIntact: doctor fails while a run's quarantine holds what an agent put in a mask's
// place, warns while masked content sits away from its pattern, and is ok otherwise.
func TestMasksIntact(t *testing.T) {
	f := newFixture(t, baseManifest+"mounts:\n  mask: [config/master.key]\n").healthy()
	f.writeWS("config/master.key", "k")
	f.recordMasks()
	wantStatus(t, "masks-intact (clean)", f.run(masksIntact), OK)

	dir := f.quarantine("abcd1234")
	got := f.run(masksIntact)
	wantStatus(t, "masks-intact (quarantine)", got, Fail)
	if !strings.Contains(got.Detail, "run abcd1234: mask replaced: .git/hooks") || !strings.Contains(got.Hint, "rm -r "+dir) {
		t.Errorf("finding %q / %q, want the event and the quarantine to remove", got.Detail, got.Hint)
	}
	wantStatus(t, "masks-intact (quarantine, again)", f.run(masksIntact), Fail)
	os.RemoveAll(dir)
	wantStatus(t, "masks-intact (quarantine removed)", f.run(masksIntact), OK)

	os.Rename(filepath.Join(f.ws, "config"), filepath.Join(f.ws, "config.moved"))
	got = f.run(masksIntact)
	wantStatus(t, "masks-intact (moved)", got, Warn)
	if !strings.Contains(got.Detail, "config.moved/master.key (holds what was masked at config/master.key)") ||
		!strings.Contains(got.Hint, "mv 'config.moved/master.key' 'config/master.key'") {
		t.Errorf("finding %q / %q, want the moved file and how to move it back", got.Detail, got.Hint)
	}
}

// TestArtifactsMasksRefusal: a workspace the next run would refuse fails artifacts.masks with
// the walk's own hint; content masked for where it came from is listed.
func TestArtifactsMasksRefusal(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	f.writeWS(".env", "k")
	f.recordMasks()
	os.Rename(filepath.Join(f.ws, ".env"), filepath.Join(f.ws, "env.txt"))
	got := f.run(artifactsMasks)
	wantStatus(t, "artifacts.masks", got, OK)
	if !strings.Contains(got.Detail, "env.txt (holds what was masked at .env)") {
		t.Errorf("detail %q, want the followed file", got.Detail)
	}
	f.cfg.Limits.MaskWalk = 1000
	for i := range 1001 {
		f.writeWS(fmt.Sprintf("flood/%04d", i), "")
	}
	got = f.run(artifactsMasks)
	wantStatus(t, "artifacts.masks (flooded)", got, Fail)
	if !strings.Contains(got.Detail, "the next run is refused") || !strings.Contains(got.Hint, "limits.mask_walk") {
		t.Errorf("finding %q / %q, want the refusal and the limit", got.Detail, got.Hint)
	}
}
