package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/render"
)

// TestPrefetchAsksOnceAndAtOnce: with a prefetch, the preflight's three inspections run
// concurrently (each reply waits until all three have been asked, so calls made one after the
// other would time out), each is asked once, and the run is ready as without one.
func TestPrefetchAsksOnceAndAtOnce(t *testing.T) {
	f := newPreflightFixture(t, pfManifest)
	var wg sync.WaitGroup
	wg.Add(3)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	barrier := func(res docker.Result) func(docker.Invocation) (docker.Result, error) {
		var once sync.Once
		return func(docker.Invocation) (docker.Result, error) {
			once.Do(wg.Done)
			select {
			case <-all:
				return res, nil
			case <-time.After(5 * time.Second):
				return docker.Result{ExitCode: 1, Stderr: []byte("the inspections were not asked at once\n")}, nil
			}
		}
	}
	f.fake.OnFunc("image inspect --format {{json .}} "+f.rs.Netd.Image, barrier(jsonOf(map[string]any{
		"Id": "sha256:1", "Config": map[string]any{"Labels": map[string]string{BinaryLabel: pfBinary}}})))
	f.fake.OnFunc("image inspect --format {{json .}} "+f.rs.Agent.Image, barrier(jsonOf(map[string]any{"Id": "sha256:2"})))
	f.fake.OnFunc("network inspect --format {{json .}} "+f.rs.Network, barrier(jsonOf(map[string]any{"Name": f.rs.Network, "Driver": "bridge"})))
	stop := f.pf.Prefetch(context.Background())
	defer stop()
	ready, err := f.pf.Run(context.Background())
	if err != nil || ready.RunSpec.Agent.Image != f.rs.Agent.Image {
		t.Fatalf("Run after Prefetch = %v, %v; want the ready sandbox", ready, err)
	}
	seen := map[string]int{}
	for _, c := range f.fake.Calls() {
		seen[strings.Join(c.Args, " ")]++
	}
	for argv, n := range seen {
		if n != 1 {
			t.Errorf("%q asked %d times, want once", argv, n)
		}
	}
	if len(seen) != 3 {
		t.Errorf("calls %v, want the three inspections", seen)
	}
}

// TestPrefetchAnswersOnlyItsName: the prefetch reads the runspec before it is verified, so a
// runspec changed then (here naming a decoy netd image, built from this binary) must not lend its
// answer to the check of the verified runspec's image (built from another binary): the run is
// refused for the real image.
func TestPrefetchAnswersOnlyItsName(t *testing.T) {
	f := newPreflightFixture(t, pfManifest)
	path := filepath.Join(f.pf.Project.Artifacts(), render.RunSpecFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	decoy := *f.rs
	decoy.Netd.Image = "abox-netd:decoy"
	b, _ := json.Marshal(&decoy)
	os.Chmod(path, 0o644)
	write(t, path, string(b))
	f.fake.On("image inspect --format {{json .}} abox-netd:decoy", jsonOf(map[string]any{
		"Id": "sha256:9", "Config": map[string]any{"Labels": map[string]string{BinaryLabel: pfBinary}}}))
	f.fake.On("image inspect --format {{json .}} "+f.rs.Netd.Image, jsonOf(map[string]any{
		"Id": "sha256:1", "Config": map[string]any{"Labels": map[string]string{BinaryLabel: "other"}}}))
	f.built()
	stop := f.pf.Prefetch(context.Background())
	defer stop()
	write(t, path, string(orig))
	os.Chmod(path, st.Mode().Perm())
	_, err = f.pf.Run(context.Background())
	if !errors.Is(err, ErrNetdBinary) || !strings.Contains(err.Error(), f.rs.Netd.Image) {
		t.Fatalf("Run = %v, want ErrNetdBinary for %s", err, f.rs.Netd.Image)
	}
	if _, err, ok := f.pf.ahead.take("image abox-netd:decoy"); !ok || err != nil {
		t.Errorf("the prefetch did not inspect the decoy the changed runspec named (%v, %v)", ok, err)
	}
}

// TestPrefetchKeepsTheOrder: with everything asked at once, the refusal is still the first check's
// (the netd image, before the network).
func TestPrefetchKeepsTheOrder(t *testing.T) {
	f := newPreflightFixture(t, pfManifest)
	f.fake.On("image inspect --format {{json .}} "+f.rs.Netd.Image, noSuch("image"))
	f.fake.On("network inspect --format {{json .}} "+f.rs.Network, noSuch("network"))
	f.built()
	stop := f.pf.Prefetch(context.Background())
	defer stop()
	_, err := f.pf.Run(context.Background())
	if !errors.Is(err, ErrImageMissing) || !strings.Contains(err.Error(), f.rs.Netd.Image) {
		t.Fatalf("Run = %v, want the netd image's refusal", err)
	}
}
