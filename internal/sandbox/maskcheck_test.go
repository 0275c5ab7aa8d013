package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/telemetry"
)

// maskedRun prepares the masks of a run on w as Sandbox.Run does, and returns the sandbox and
// the outcome teardown would check.
func maskedRun(t *testing.T, w *ws, patterns []string) (*Sandbox, *Outcome) {
	t.Helper()
	s := &Sandbox{Project: paths.Project{Workspace: w.dir, Dir: t.TempDir()}, Now: time.Now}
	out := &Outcome{ID: "run1", Dir: filepath.Join(s.Project.Dir, "runs", "r1")}
	if err := s.prepareMasks(Options{Masks: patterns}, out); err != nil {
		t.Fatalf("prepareMasks: %v", err)
	}
	t.Cleanup(out.masks.release)
	return s, out
}

// event is a MaskEvent as the tests compare it, with the quarantine reduced to whether there
// is one.
type event struct {
	Mask, Kind, Planted, PlantedType, Original string
	Quarantined                                bool
	Problem                                    string
}

func events(out *Outcome) []event {
	var es []event
	for _, e := range out.MaskEvents {
		es = append(es, event{e.Mask, e.Kind, e.Planted, e.PlantedType, e.Original, e.Quarantine != "", e.Problem})
	}
	return es
}

// TestCheckMasks: at teardown every mask must hold what it held at start. Content that moved
// is found; what the agent put in a mask's place, or in place of one of its directories, is
// moved out of the workspace into the run's quarantine and reported as a failure.
func TestCheckMasks(t *testing.T) {
	hook := "#!/bin/sh\necho pwned\n"
	for _, tc := range []struct {
		name     string
		setup    func(*ws)
		patterns []string
		agent    func(*ws) // what the agent did during the run
		want     []event
		gone     []string // workspace paths that must no longer exist
		kept     []string // workspace paths that must still exist
	}{
		{
			name:     "untouched",
			setup:    func(w *ws) { w.file(".git/hooks/pre-commit.sample", "x").file(".env", "k") },
			patterns: []string{".env*", ".git/hooks"},
			agent:    func(w *ws) { w.file("src/main.go", "package main") },
		},
		{
			name:     "moved with its directory",
			setup:    func(w *ws) { w.file("config/master.key", "k") },
			patterns: []string{"config/master.key"},
			agent:    func(w *ws) { w.mv("config", "config.moved") },
			want:     []event{{Mask: "config/master.key", Kind: "moved", Original: "config.moved/master.key"}},
			kept:     []string{"config.moved/master.key"},
		},
		{
			name:     ".git swapped for one with a hook",
			setup:    func(w *ws) { w.file(".git/HEAD", "ref").file(".git/hooks/pre-commit.sample", "x") },
			patterns: []string{".git/hooks"},
			agent: func(w *ws) {
				w.mv(".git", ".git.moved").file(".git/HEAD", "ref").file(".git/hooks/post-checkout", hook)
				os.Chmod(filepath.Join(w.dir, ".git/hooks/post-checkout"), 0o755)
			},
			want: []event{{Mask: ".git/hooks", Kind: "planted", Planted: ".git/hooks", PlantedType: "directory",
				Original: ".git.moved/hooks", Quarantined: true}},
			gone: []string{".git/hooks"},
			kept: []string{".git/HEAD", ".git.moved/hooks/pre-commit.sample"},
		},
		{
			name:     "a nested file replaced after its directory moved",
			setup:    func(w *ws) { w.file("sub/.env", "k") },
			patterns: []string{".env*"},
			agent:    func(w *ws) { w.mv("sub", "sub2").file("sub/.env", "PATH=/evil") },
			want: []event{{Mask: "sub/.env", Kind: "planted", Planted: "sub/.env", PlantedType: "file",
				Original: "sub2/.env", Quarantined: true}},
			gone: []string{"sub/.env"},
			kept: []string{"sub2/.env", "sub"},
		},
		{
			name:     "a directory of the mask replaced by a symlink",
			setup:    func(w *ws) { w.file(".git/hooks/x.sample", "x") },
			patterns: []string{".git/hooks"},
			agent: func(w *ws) {
				w.mv(".git", ".git.moved").file("fake/hooks/post-checkout", hook).symlink("fake", ".git")
			},
			want: []event{{Mask: ".git/hooks", Kind: "planted", Planted: ".git", PlantedType: "symlink",
				Original: ".git.moved/hooks", Quarantined: true}},
			gone: []string{".git"},
			kept: []string{"fake/hooks/post-checkout"},
		},
		{
			name:     "a directory of the mask replaced by a gitfile",
			setup:    func(w *ws) { w.file(".git/hooks/x.sample", "x") },
			patterns: []string{".git/hooks"},
			agent:    func(w *ws) { w.mv(".git", "g").file(".git", "gitdir: g2\n") },
			want: []event{{Mask: ".git/hooks", Kind: "planted", Planted: ".git", PlantedType: "file",
				Original: "g/hooks", Quarantined: true}},
			gone: []string{".git"},
		},
		{
			name:     "a literal mask path that appeared",
			setup:    func(w *ws) { w.file(".git/HEAD", "ref") },
			patterns: []string{".git/hooks"},
			agent:    func(w *ws) { w.file(".git/hooks/post-checkout", hook) },
			want:     []event{{Mask: ".git/hooks", Kind: "appeared", Planted: ".git/hooks", PlantedType: "directory", Quarantined: true}},
			gone:     []string{".git/hooks"},
			kept:     []string{".git/HEAD"},
		},
		{
			name:     "the original inside what was planted",
			setup:    func(w *ws) { w.file("a/b/key", "k") },
			patterns: []string{"a/b/"},
			agent:    func(w *ws) { w.mv("a", "x").mkdir("a").mv("x", "a/b") },
			want: []event{{Mask: "a/b", Kind: "planted", Planted: "a/b", PlantedType: "directory",
				Original: "QUARANTINE/1-b/b", Quarantined: true}},
			gone: []string{"a/b"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWS(t)
			tc.setup(w)
			s, out := maskedRun(t, w, tc.patterns)
			tc.agent(w)
			s.checkMasks(out)
			got := events(out)
			qdir := filepath.Join(out.Dir, "quarantine")
			for i := range got {
				got[i].Original = strings.ReplaceAll(got[i].Original, qdir, "QUARANTINE")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for _, rel := range tc.gone {
				if _, err := os.Lstat(filepath.Join(w.dir, rel)); err == nil {
					t.Errorf("%s is still in the workspace", rel)
				}
			}
			for _, rel := range tc.kept {
				if _, err := os.Lstat(filepath.Join(w.dir, rel)); err != nil {
					t.Errorf("%s: %v, want it left alone", rel, err)
				}
			}
			checkQuarantine(t, out, tc.want)
		})
	}
}

// checkQuarantine: a quarantine exists exactly when something failed, its index lists the
// events, and nothing in it is executable.
func checkQuarantine(t *testing.T, out *Outcome, want []event) {
	t.Helper()
	qs, err := Quarantines(filepath.Join(out.Dir, ".."))
	if err != nil {
		t.Fatal(err)
	}
	failed := false
	for _, e := range out.MaskEvents {
		failed = failed || e.Failed()
	}
	if failed != (len(qs) == 1) {
		t.Fatalf("quarantines = %+v with failures %v", qs, failed)
	}
	if !failed {
		return
	}
	if qs[0].Index.Run != "run1" || len(qs[0].Index.Events) != len(want) || len(qs[0].Entries) == 0 {
		t.Errorf("quarantine index = %+v, entries %v", qs[0].Index, qs[0].Entries)
	}
	filepath.Walk(qs[0].Dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			t.Errorf("%s is executable in the quarantine: %v", p, fi.Mode())
		}
		return nil
	})
}

// TestCheckMasksLinkedMounts: a mask mounted because it held moved content is checked like any
// other, and several masks diverted by one entry move it once.
func TestCheckMasksSharedDiversion(t *testing.T) {
	w := newWS(t).file("c/a.key", "k").file("c/b.key", "k")
	s, out := maskedRun(t, w, []string{"c/a.key", "c/b.key"})
	w.mv("c", "c2").symlink("c2", "c")
	s.checkMasks(out)
	got := events(out)
	want := []event{
		{Mask: "c/a.key", Kind: "planted", Planted: "c", PlantedType: "symlink", Original: "c2/a.key", Quarantined: true},
		{Mask: "c/b.key", Kind: "planted", Planted: "c", PlantedType: "symlink", Original: "c2/b.key", Quarantined: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if out.MaskEvents[0].Quarantine != out.MaskEvents[1].Quarantine {
		t.Errorf("one diversion quarantined twice: %q, %q", out.MaskEvents[0].Quarantine, out.MaskEvents[1].Quarantine)
	}
}

// TestQuarantineCopy: across filesystems the planted tree is copied as data — files 0600
// without execute bits, links as links, special files never opened — and removed.
func TestQuarantineCopy(t *testing.T) {
	src := newWS(t).file("hooks/post-checkout", "#!/bin/sh\n").file("hooks/sub/x", "y").symlink("/etc/passwd", "hooks/link")
	os.Chmod(filepath.Join(src.dir, "hooks/post-checkout"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(src.dir, "hooks/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	from, _ := os.Open(src.dir)
	to, _ := os.Open(dst)
	defer from.Close()
	defer to.Close()
	if err := (&copier{}).copyAt(from, "hooks", to, "1-hooks", 0); err != nil {
		t.Fatalf("copyAt: %v", err)
	}
	if err := removeAt(from, "hooks", 0); err != nil {
		t.Fatalf("removeAt: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(src.dir, "hooks")); err == nil {
		t.Error("the planted tree is still in the workspace")
	}
	fi, err := os.Stat(filepath.Join(dst, "1-hooks/post-checkout"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("copied hook: %v, %v; want mode 0600", fi, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dst, "1-hooks/sub/x")); string(data) != "y" {
		t.Errorf("copied sub/x = %q", data)
	}
	if target, err := os.Readlink(filepath.Join(dst, "1-hooks/link")); err != nil || target != "/etc/passwd" {
		t.Errorf("copied link = %q, %v; want the link itself", target, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "1-hooks/fifo")); err == nil {
		t.Error("the fifo was copied; special files are never opened")
	}
}

// TestLiveLock: sandboxes that mask nothing share the project; one that masks something is
// its only live one. A sandbox starting while another walks waits for the walk; one starting
// beside a sandbox that masks something is refused at once.
func TestLiveLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.lock")
	a, err := lockLive(path)
	if err != nil || a.shared {
		t.Fatalf("first lock = %+v, %v; want it exclusive", a, err)
	}
	second := make(chan *liveLock)
	go func() {
		b, err := lockLive(path) // waits while a walks
		if err != nil {
			t.Errorf("a sandbox waiting for a walk that found nothing: %v", err)
		}
		second <- b
	}()
	time.Sleep(200 * time.Millisecond)
	if err := a.settle(false); err != nil {
		t.Fatalf("settling without masks: %v", err)
	}
	b := <-second
	if b == nil || !b.shared {
		t.Fatalf("second lock = %+v, want it shared", b)
	}
	c, err := lockLive(path)
	if err != nil || !c.shared {
		t.Fatalf("third lock = %+v, %v; want it shared", c, err)
	}
	if err := c.settle(true); err == nil {
		t.Error("a sandbox with masks was let in beside live ones")
	}
	a.unlock()
	b.unlock()
	c.unlock()

	d, _ := lockLive(path)
	if err := d.settle(true); err != nil {
		t.Fatalf("the only sandbox, with masks: %v", err)
	}
	start := time.Now()
	if _, err := lockLive(path); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("beside a sandbox that masks paths: %v after %s, want a refusal at once", err, time.Since(start))
	}
	d.unlock()
	if e, err := lockLive(path); err != nil || e.shared {
		t.Errorf("after the last sandbox ended: %+v, %v; want an exclusive lock", e, err)
	} else {
		e.unlock()
	}
}

// TestRunRefusesUnfinishedMaskWalk: a workspace the walk cannot finish is refused before any
// docker call, with ErrBoundary and the walk's own hint.
func TestRunRefusesUnfinishedMaskWalk(t *testing.T) {
	w := newWS(t).file(".env", "TOKEN=x")
	for i := range 1010 {
		w.file(fmt.Sprintf("flood/%05d", i), "")
	}
	fake := dockertest.New(t)
	s := &Sandbox{
		Docker: docker.NewClient(fake, nil), Warden: goWarden(docker.NewClient(fake, nil), nil),
		Project: paths.Project{Workspace: w.dir, Dir: t.TempDir()},
		Spec: &render.RunSpec{
			Netd:  render.RunCommand{Args: []string{"run", "--name", "abox-netd-p-" + render.RunToken}, Image: "abox-netd:1"},
			Agent: render.RunCommand{Args: []string{"create", "--name", "agent-p-" + render.RunToken}, Image: "abox-agent-p:1", Command: []string{"claude"}},
		},
		Now: time.Now,
	}
	out, err := s.Run(context.Background(), Options{Prompt: "hi", Masks: []string{".env*"}, MaskWalkLimit: 1000})
	var me *MaskError
	if !errors.Is(err, ErrBoundary) || !errors.As(err, &me) || !strings.Contains(err.Error(), "flood") {
		t.Fatalf("Run = %v, want ErrBoundary with a MaskError naming flood", err)
	}
	if out.Result != "refused" || len(fake.Calls()) != 0 {
		t.Errorf("result %q after docker calls %v, want refused before any", out.Result, fake.Calls())
	}
	if _, err := os.Stat(s.Project.MaskRecord()); err == nil {
		t.Error("a refused walk was recorded")
	}
}

// TestMaskEventFailed: only content put in a mask's place is a failure.
func TestMaskEventFailed(t *testing.T) {
	for kind, want := range map[string]bool{telemetry.MaskMoved: false, telemetry.MaskPlanted: true, telemetry.MaskAppeared: true} {
		if got := (telemetry.MaskEvent{Kind: kind}).Failed(); got != want {
			t.Errorf("%s: Failed() = %v, want %v", kind, got, want)
		}
	}
}
