package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIsolatedLeftovers: a clone with no record, and a pending run that was never collected
// (abox killed during the run), are each named with the command that removes them; with
// neither, the check passes.
func TestIsolatedLeftovers(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "nothing isolated", f.run(isolatedRuns), OK)

	mkdir(t, filepath.Join(f.project.Clones(), "lost1"))
	got := f.run(isolatedRuns)
	wantStatus(t, "orphan", got, Warn)
	if !strings.Contains(got.Detail, "lost1") || !strings.Contains(got.Hint, "abox discard") {
		t.Errorf("orphan: %s / %s", got.Detail, got.Hint)
	}
	os.Remove(filepath.Join(f.project.Clones(), "lost1"))

	mkdir(t, filepath.Dir(f.project.IsolatedRun("cut1")))
	rec := `{"id":"cut1","branch":"abox/cut1","base":"` + strings.Repeat("a", 40) + `","state":"pending"}`
	if err := os.WriteFile(f.project.IsolatedRun("cut1"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	got = f.run(isolatedRuns)
	wantStatus(t, "uncollected", got, Warn)
	if !strings.Contains(got.Detail, "cut1") {
		t.Errorf("uncollected: %s", got.Detail)
	}
}
