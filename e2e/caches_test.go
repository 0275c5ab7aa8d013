//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// TestCachesPersist: with mounts.caches, what one run writes into a toolchain cache (here npm's
// and go's) is there, the agent's, in the next run; a cache the manifest does not name starts
// empty in every run (what the first run wrote there is gone); nuke removes the cache volumes.
func TestCachesPersist(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "caches", nil, "mounts:\n  caches: [npm, go]\n")
	write := strings.Join([]string{
		`for d in npm go pip; do mkdir -p ~/.cache/$d && echo "$d-from-run-1" > ~/.cache/$d/marker && echo "wrote-$d" || echo "nowrite-$d"; done`,
		`echo "gocache [$GOCACHE]"`,
	}, "\n")
	out, _ := attackRun(t, h, write)
	for _, want := range []string{"wrote-npm", "wrote-go", "wrote-pip", "gocache [/home/agent/.cache/go/build]"} {
		if !strings.Contains(out, want) {
			t.Errorf("first run: want %q:\n%s", want, out)
		}
	}
	read := `for d in npm go pip; do echo "read-$d [$(cat ~/.cache/$d/marker 2>/dev/null)] owner $(stat -c %u ~/.cache/$d 2>/dev/null)"; done`
	// pip is not in mounts.caches: what the first run wrote there was scratch space, gone now.
	out, _ = attackRun(t, h, read)
	for _, want := range []string{"read-npm [npm-from-run-1] owner 1000", "read-go [go-from-run-1] owner 1000", "read-pip []"} {
		if !strings.Contains(out, want) {
			t.Errorf("second run: want %q:\n%s", want, out)
		}
	}
	vols := h.Docker("volume", "ls", "--format", "{{.Name}}", "--filter", "name=abox-cache-"+h.ProjectHash()).Stdout
	if !strings.Contains(vols, "abox-cache-"+h.ProjectHash()+"-npm") {
		t.Errorf("no npm cache volume of the project: %q", vols)
	}
	if res := h.Abox("nuke", "--yes", "--keep-auth"); !res.OK() {
		t.Fatalf("abox nuke: %s", res)
	}
	if vols := h.Docker("volume", "ls", "-q", "--filter", "name=abox-cache-"+h.ProjectHash()).Stdout; strings.TrimSpace(vols) != "" {
		t.Errorf("cache volumes left after nuke: %q", vols)
	}
}

// TestNukeRemovesPoisonedCache: the agent poisons its npm cache and takes `caches` out of
// agentbox.yaml, which it can write, hoping its poison outlives `abox nuke` and reaches the
// project set up again at the same path. nuke removes the project's cache volumes by the
// project's hash, whatever the manifest says now.
func TestNukeRemovesPoisonedCache(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "poison", nil, "mounts:\n  caches: [npm]\n")
	chownWorkspace(t, h) // the user's checkout, agentbox.yaml included, is theirs: the agent's uid
	res := h.Abox("run", `mkdir -p ~/.cache/npm && echo poison > ~/.cache/npm/_poison && `+
		`grep -v -e '^mounts:' -e 'caches:' agentbox.yaml > m.tmp && cat m.tmp > agentbox.yaml && rm m.tmp && echo dropped`)
	if !strings.Contains(agentOutput(res.Stdout), "dropped") {
		t.Fatalf("the agent did not rewrite the manifest: %s", res)
	}
	vol := "abox-cache-" + h.ProjectHash() + "-npm"
	if !h.Docker("volume", "inspect", vol).OK() {
		t.Fatalf("no poisoned cache volume %s to remove", vol)
	}
	if res := h.Abox("nuke", "--yes", "--keep-auth"); !res.OK() {
		t.Fatalf("abox nuke: %s", res)
	}
	if h.Docker("volume", "inspect", vol).OK() {
		t.Errorf("the poisoned cache %s outlived nuke", vol)
	}
}
