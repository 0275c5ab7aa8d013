package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNetdRetired: a finished netd on the project's retire list that still runs is being
// removed while the list is fresh, and a warning naming it once the list has been left alone
// for longer than the after-run process takes; one on the list that is gone, or a running netd
// not on it (the spare, a run's own), is no finding.
func TestNetdRetired(t *testing.T) {
	f := newFixture(t, baseManifest).daemonUp().built().noGateway()
	netd := f.liveNetd() // abox-netd-demo-0123abcd
	f.running(netd)
	wantStatus(t, "no retire list", f.run(netdRetired), OK)

	list := filepath.Join(f.project.Dir, "retired-netd") // sandbox's retire list
	if err := writeFile(list, "abox-netd-demo-0123abcd\nabox-netd-demo-gone0000\n"); err != nil {
		t.Fatal(err)
	}
	written := fixedNow.Add(-30 * time.Second)
	if err := os.Chtimes(list, written, written); err != nil {
		t.Fatal(err)
	}
	got := f.run(netdRetired)
	wantStatus(t, "retired 30 s ago", got, OK)
	if !strings.Contains(got.Detail, "being removed") {
		t.Errorf("retired 30 s ago: %q, want it said to be on its way out", got.Detail)
	}

	written = fixedNow.Add(-10 * time.Minute)
	if err := os.Chtimes(list, written, written); err != nil {
		t.Fatal(err)
	}
	got = f.run(netdRetired)
	wantStatus(t, "retired 10 min ago", got, Warn)
	if !strings.Contains(got.Detail, "abox-netd-demo-0123abcd") || strings.Contains(got.Detail, "gone0000") ||
		!strings.Contains(got.Detail, "10m0s") {
		t.Errorf("retired 10 min ago: %q, want the running one named with its age, not the gone one", got.Detail)
	}

	if err := writeFile(list, "abox-netd-demo-other000\n"); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(list, written, written)
	wantStatus(t, "running netd not on the list", f.run(netdRetired), OK)
}
