package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/manifest"
)

// TestManifestApprovalCorrupt: an approved manifest that does not parse is named, not shown as
// a change of agentbox.yaml, and fails manifest.approved and its boundary twin.
func TestManifestApprovalCorrupt(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	if err := os.WriteFile(f.project.Approved(), []byte("version: [1\n\t:::"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := f.run(manifestApproved)
	wantStatus(t, "manifest.approved", got, Fail)
	if !strings.Contains(got.Detail, "approved.yaml does not parse") || strings.Contains(got.Detail, "changed since") ||
		!strings.Contains(got.Hint, "abox up") {
		t.Errorf("finding %q / %q, want the corrupt file named and `abox up`, no diff", got.Detail, got.Hint)
	}
	wantStatus(t, "boundary.manifest-approved", boundaryResult(t, f, "boundary.manifest-approved").Finding, Fail)
}

// TestManifestApprovalSymlinked: an approval that is a symlink to the workspace's manifest,
// which the agent writes, vouches for nothing: manifest.approved fails, and a change the agent
// makes to agentbox.yaml is not taken for abox's own approved copy by the watch list.
func TestManifestApprovalSymlinked(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	f.baseline()
	os.Remove(f.project.Approved())
	if err := os.Symlink(filepath.Join(f.ws, manifest.FileName), f.project.Approved()); err != nil {
		t.Fatal(err)
	}
	got := f.run(manifestApproved)
	wantStatus(t, "manifest.approved", got, Fail)
	if !strings.Contains(got.Detail, "cannot be read") {
		t.Errorf("detail %q, want the approval refused as unreadable", got.Detail)
	}
	f.manifest = baseManifest + "mounts:\n  watch: [x]\n"
	f.writeWS(manifest.FileName, f.manifest)
	got = f.run(execSurface)
	wantStatus(t, "exec-surface", got, Warn)
	if !strings.Contains(got.Detail, "changed: agentbox.yaml") {
		t.Errorf("exec-surface %q, want the agent's change of agentbox.yaml", got.Detail)
	}
}
