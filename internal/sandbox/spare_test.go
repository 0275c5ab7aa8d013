package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/policy"
)

// spareFixture is a sandbox whose netd bind-mounts a policy directory, over a fake docker that
// starts a spare: netd runs, gets ready, has the expected ruleset and the image ID img.
func spareFixture(t *testing.T, fake *dockertest.Fake) (*Sandbox, string) {
	s := startFixture(t, fake)
	pol := t.TempDir()
	os.WriteFile(filepath.Join(pol, "netd.json"), []byte(`{"allow":["a.example"]}`), 0o600)
	s.Spec.Netd.Args = append(s.Spec.Netd.Args, "--mount", "type=bind,source="+pol+",target=/etc/abox,readonly")
	return s, pol
}

func inspectReply(id, image string, running bool) docker.Result {
	return inspectStarted(id, image, running, spareStartedAt)
}

// spareStartedAt is the StartedAt of the fake spare's container.
const spareStartedAt = "2026-12-06T10:00:00.123456789Z"

func inspectStarted(id, image string, running bool, started string) docker.Result {
	b, _ := json.Marshal(map[string]any{"Id": id, "Image": image, "State": map[string]any{"Running": running, "StartedAt": started}})
	return docker.Result{Stdout: append(b, '\n')}
}

// onSpareStart registers the docker replies of one spare's start-up: run answers its docker run,
// then it gets ready, has the expected ruleset and the image ID sha256:netd1.
func onSpareStart(fake *dockertest.Fake, run func(docker.Invocation) (docker.Result, error)) {
	fake.OnFunc("run", run).Once()
	fake.On("logs", docker.Result{Stdout: []byte(`{"event":"ready"}` + "\n")}).Once()
	fake.On("exec", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)}).Once()
	fake.On("container inspect", inspectReply("spare-id", "sha256:netd1", true)).Once()
}

// startSpare starts a spare through fake and returns its record.
func startSpare(t *testing.T, s *Sandbox, fake *dockertest.Fake) *spareRecord {
	t.Helper()
	onSpareStart(fake, func(docker.Invocation) (docker.Result, error) {
		return docker.Result{Stdout: []byte("spare-id\n")}, nil
	})
	if err := s.StartSpare(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.readSpare()
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestSpareClaimedOnce: a spare that is the netd the run would start is handed to the run (its
// id becomes the run's) and its record is gone, so no second run can take it.
func TestSpareClaimedOnce(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	rec := startSpare(t, s, fake)
	fake.On("container inspect", inspectReply("spare-id", "sha256:netd1", true)).Once()
	fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:netd1"}` + "\n")}).Once()
	out := &Outcome{}
	if !s.claimSpare(context.Background(), Options{}, out) || out.ID != rec.ID || out.Spare.IsZero() {
		t.Fatalf("the fitting spare was not claimed: %+v", out)
	}
	again := &Outcome{}
	if s.claimSpare(context.Background(), Options{}, again) || again.ID != "" {
		t.Fatalf("the spare was handed to a second run: %+v", again)
	}
}

// TestSpareNotFitRemoved: a spare that is not exactly the run's netd is not used but removed,
// with a note that says why: another argv (the gateway moved), an edited mounted file, a
// container that is not running or not the one started, one started again since it was seen
// ready (docker restart), or a netd image rebuilt since.
func TestSpareNotFitRemoved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *Sandbox, pol string, o *Options, fake *dockertest.Fake)
		why    string
	}{
		{"argv", func(_ *Sandbox, _ string, o *Options, _ *dockertest.Fake) {
			o.Gateway = netip.MustParseAddrPort("172.20.0.9:8811")
		}, "argv"},
		{"mounted file", func(_ *Sandbox, pol string, _ *Options, _ *dockertest.Fake) {
			os.WriteFile(filepath.Join(pol, "netd.json"), []byte(`{"allow":["b.example"]}`), 0o600)
		}, "files it mounts"},
		{"not running", func(_ *Sandbox, _ string, _ *Options, fake *dockertest.Fake) {
			fake.On("container inspect", inspectReply("spare-id", "sha256:netd1", false)).Once()
			fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:netd1"}` + "\n")}).Once()
		}, "not running"},
		{"another container", func(_ *Sandbox, _ string, _ *Options, fake *dockertest.Fake) {
			fake.On("container inspect", inspectReply("other-id", "sha256:netd1", true)).Once()
			fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:netd1"}` + "\n")}).Once()
		}, "not running"},
		{"started again", func(_ *Sandbox, _ string, _ *Options, fake *dockertest.Fake) {
			fake.On("container inspect", inspectStarted("spare-id", "sha256:netd1", true, "2026-12-06T10:05:00Z")).Once()
			fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:netd1"}` + "\n")}).Once()
		}, "started again"},
		{"image rebuilt", func(_ *Sandbox, _ string, _ *Options, fake *dockertest.Fake) {
			fake.On("container inspect", inspectReply("spare-id", "sha256:netd1", true)).Once()
			fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:netd2"}` + "\n")}).Once()
		}, "image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := dockertest.New(t)
			s, pol := spareFixture(t, fake)
			rec := startSpare(t, s, fake)
			var o Options
			tc.change(s, pol, &o, fake)
			fake.On("rm --force --volumes "+rec.Netd, docker.Result{}).Once()
			out := &Outcome{}
			if s.claimSpare(context.Background(), o, out) || out.ID != "" {
				t.Fatalf("a spare whose %s changed was claimed: %+v", tc.name, out)
			}
			if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], tc.why) {
				t.Errorf("notes = %q, want one saying %q", out.Notes, tc.why)
			}
			if _, err := s.readSpare(); !os.IsNotExist(err) {
				t.Errorf("the record of the unused spare is still there: %v", err)
			}
		})
	}
}

// TestSpareNotRecordedWhenUnverified: a spare whose loaded ruleset is not the expected one is
// removed and never recorded, so no run can take it.
func TestSpareNotRecordedWhenUnverified(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	fake.On("run", docker.Result{Stdout: []byte("spare-id\n")})
	fake.On("logs", docker.Result{Stdout: []byte(`{"event":"ready"}` + "\n")})
	fake.On("exec", docker.Result{Stdout: []byte(`{"nftables":[]}`)})
	fake.On("rm --force --volumes", docker.Result{})
	if err := s.StartSpare(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "ruleset") {
		t.Fatalf("StartSpare with a wrong ruleset = %v, want the read-back's refusal", err)
	}
	if _, err := s.readSpare(); !os.IsNotExist(err) {
		t.Errorf("an unverified spare was recorded: %v", err)
	}
}

// TestSpareIgnoredWithRunID: a run whose id was chosen before it (an isolated run) never takes
// the spare, which stays for the next run.
func TestSpareIgnoredWithRunID(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	startSpare(t, s, fake)
	out := &Outcome{ID: "0123abcd"}
	if s.claimSpare(context.Background(), Options{ID: "0123abcd"}, out) || out.ID != "0123abcd" {
		t.Fatalf("a run with its own id took the spare: %+v", out)
	}
	if _, err := s.readSpare(); err != nil {
		t.Errorf("the spare's record is gone: %v", err)
	}
}

// TestSpareLeftByCrashRemoved: a spare-netd process that died after its `docker run` and
// before it recorded the spare (killed, or the host went down) leaves a container no record
// names. The next start removes it before it starts its own.
func TestSpareLeftByCrashRemoved(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	if err := os.WriteFile(s.startingFile(), []byte("abox-netd-p-0badc0de\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake.On("rm --force --volumes abox-netd-p-0badc0de", docker.Result{}).Once()
	rec := startSpare(t, s, fake)
	if rec.Netd == "abox-netd-p-0badc0de" {
		t.Fatalf("the new spare has the crashed one's name")
	}
	if _, err := os.Stat(s.startingFile()); !os.IsNotExist(err) {
		t.Errorf("the starting marker is still there once the spare is recorded: %v", err)
	}
}

// TestSpareStartingMarkedBeforeDockerRun: the container a spare-netd process starts is named in
// the starting marker before its `docker run`, so that a crash at any point after leaves it
// findable; the marker names the spare it then records.
func TestSpareStartingMarkedBeforeDockerRun(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	var marked string
	onSpareStart(fake, func(docker.Invocation) (docker.Result, error) {
		b, _ := os.ReadFile(s.startingFile())
		marked = strings.TrimSpace(string(b))
		return docker.Result{Stdout: []byte("spare-id\n")}, nil
	})
	if err := s.StartSpare(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.readSpare()
	if err != nil || marked == "" || marked != rec.Netd {
		t.Fatalf("at docker run the starting marker named %q; recorded %+v (%v)", marked, rec, err)
	}
}

// TestSpareClaimedThenRefusedRemoved: a run that would take the spare but cannot make its run
// directory removes the spare: no record names it any more, so nothing else would. The run,
// which cannot make a directory of its own either, is refused.
func TestSpareClaimedThenRefusedRemoved(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	rec := startSpare(t, s, fake)
	fake.On("container inspect", inspectReply("spare-id", "sha256:netd1", true)).Once()
	fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:netd1"}` + "\n")}).Once()
	fake.On("rm --force --volumes "+rec.Netd, docker.Result{}).Once()
	if err := os.WriteFile(s.Project.Runs(), nil, 0o600); err != nil { // runs/ cannot be made
		t.Fatal(err)
	}
	out, err := s.Run(context.Background(), Options{SpareNetd: true})
	if err == nil || len(out.Notes) == 0 || !strings.Contains(out.Notes[0], "the spare netd was not used") {
		t.Fatalf("Run = %+v, %v; want the run refused, its spare removed", out, err)
	}
}

// TestNukeWaitsForStartingSpare: `abox nuke` holds the spare lock ([HoldSpares]) while it
// removes the project's containers: it waits for a spare-netd process in the middle of starting
// one, whose container would otherwise appear after nuke listed the containers and outlive it.
func TestNukeWaitsForStartingSpare(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	running, release := make(chan struct{}), make(chan struct{})
	onSpareStart(fake, func(docker.Invocation) (docker.Result, error) {
		close(running)
		<-release
		return docker.Result{Stdout: []byte("spare-id\n")}, nil
	})
	started := make(chan error, 1)
	go func() { started <- s.StartSpare(context.Background(), Options{}) }()
	<-running
	held := make(chan error, 1)
	var unhold func()
	go func() {
		var err error
		unhold, err = HoldSpares(s.Project, 10*time.Second)
		held <- err
	}()
	select {
	case err := <-held:
		t.Fatalf("nuke's hold on spares returned (%v) while a spare was being started", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil {
		t.Fatalf("HoldSpares after the spare started: %v", err)
	}
	defer unhold()
	if err := s.StartSpare(context.Background(), Options{}); err != nil { // held: starts nothing
		t.Fatalf("StartSpare while nuke holds spares: %v", err)
	}
}

// TestSpareOffNotTaken: once defaults.spare_netd is off, a run does not take the spare an earlier
// run left (the user opted out of it), and [Sandbox.RemoveSpare], which such a run calls, removes
// it and its record, so that it does not idle on.
func TestSpareOffNotTaken(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	rec := startSpare(t, s, fake)
	if err := os.WriteFile(s.Project.Runs(), nil, 0o600); err != nil { // the run stops after the claim
		t.Fatal(err)
	}
	out, _ := s.Run(context.Background(), Options{})
	if out.ID == rec.ID || !out.Spare.IsZero() {
		t.Fatalf("a run with spare_netd off took the spare: %+v", out)
	}
	fake.On("rm --force --volumes "+rec.Netd, docker.Result{}).Once()
	if err := s.RemoveSpare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.readSpare(); !os.IsNotExist(err) {
		t.Errorf("the spare's record is still there: %v", err)
	}
}

// TestSpareClaimNotBlockedByAStart: while a spare-netd process starts a spare (its docker run
// held here) a run's claim is not kept waiting behind it, and a claim waits out a brief hold of
// the record (a start checking the spare it found) instead of giving the spare up: the run just
// after another takes the spare that run left.
func TestSpareClaimNotBlockedByAStart(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	rec := startSpare(t, s, fake)
	// A brief hold of the record lock: the claim waits for it.
	unlock, ok, err := s.lockSpare()
	if err != nil || !ok {
		t.Fatalf("lockSpare = %v, %v", ok, err)
	}
	go func() { time.Sleep(300 * time.Millisecond); unlock() }()
	fake.On("container inspect", inspectReply("spare-id", "sha256:netd1", true)).Once()
	fake.On("image inspect", docker.Result{Stdout: []byte(`{"Id":"sha256:netd1"}` + "\n")}).Once()
	out := &Outcome{}
	if !s.claimSpare(context.Background(), Options{}, out) || out.ID != rec.ID {
		t.Fatalf("a claim behind a brief hold of the record gave the spare up: %+v", out)
	}
	// A start in progress holds only the start lock: a claim meanwhile finds no record at once.
	running, release := make(chan struct{}), make(chan struct{})
	onSpareStart(fake, func(docker.Invocation) (docker.Result, error) {
		close(running)
		<-release
		return docker.Result{Stdout: []byte("spare-id\n")}, nil
	})
	started := make(chan error, 1)
	go func() { started <- s.StartSpare(context.Background(), Options{}) }()
	<-running
	t0 := time.Now()
	if s.claimSpare(context.Background(), Options{}, &Outcome{}) {
		t.Errorf("a spare still starting was claimed")
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("the claim waited %v behind a spare's start", d)
	}
	close(release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
}

// spareRunReplies registers the replies of a run on a spare past its claim, each optional: the
// agent's create, start and exit, netd's finish or stop, the harvest and the removals.
func spareRunReplies(fake *dockertest.Fake) {
	fake.On("create", docker.Result{Stdout: []byte("agent-id\n")}).Optional()
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(time.Second) // netd outlives the agent
		return docker.Result{}, nil
	}).Optional()
	fake.On("start", docker.Result{Stdout: []byte(`{"type":"result"}` + "\n")}).Optional()
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":0}}`)}).Optional()
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)}).Optional()
	fake.On("stop", docker.Result{}).Optional()
	fake.On("cp", docker.Result{}).Optional()
	fake.On("rm", docker.Result{}).Optional()
}

// TestSpareLookedAhead: what [LookAhead] asked of the spare before the preflight (its container,
// its loaded ruleset, both by container ID) is taken by the run that claims that spare: the claim
// and the policy verify ask docker nothing more, and the run does not wait for a ready line the
// spare printed when it started. The decisions stay: the same run with a read-back that is not
// the expected ruleset is refused, and the agent never starts.
func TestSpareLookedAhead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ruleset []byte
		refused bool
	}{{"expected ruleset", policy.ExpectedRuleset(policy.NetdUID), false}, {"other ruleset", policy.ExpectedRuleset(policy.NetdUID + 1), true}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := dockertest.New(t)
			s, _ := spareFixture(t, fake)
			rec := startSpare(t, s, fake)
			fake.On("container inspect --format {{json .}} spare-id", inspectReply("spare-id", "sha256:netd1", true)).Once()
			fake.On("exec --user 0 spare-id", docker.Result{Stdout: tc.ruleset}).Once()
			spareRunReplies(fake)
			before := len(fake.Calls())
			ahead, stop := LookAhead(context.Background(), s.Docker, s.Project)
			defer stop()
			if ahead == nil {
				t.Fatal("LookAhead found no spare")
			}
			out, err := s.Run(context.Background(), Options{Prompt: "hi", SpareNetd: true, Ahead: ahead, NetdImageID: "sha256:netd1"})
			if out.ID != rec.ID {
				t.Fatalf("the run did not take the spare: %+v (%v)", out, err)
			}
			var asked []string
			for _, c := range fake.Calls()[before:] {
				asked = append(asked, strings.Join(c.Args, " "))
			}
			if n := countPrefix(asked, "exec"); n != 1 {
				t.Errorf("calls %q: the ruleset was read back %d times, want once, ahead", asked, n)
			}
			if n := countPrefix(asked, "container inspect --format {{json .}} spare-id") + countPrefix(asked, "container inspect "+rec.Netd); n != 1 {
				t.Errorf("calls %q: the spare was inspected %d times, want once, ahead", asked, n)
			}
			if countPrefix(asked, "image inspect") != 0 {
				t.Errorf("calls %q: the netd image was inspected again after the preflight", asked)
			}
			started := countPrefix(asked, "start") > 0
			if tc.refused {
				if !errors.Is(err, ErrBoundary) || started {
					t.Errorf("Run = %v, agent started %v; want a boundary refusal and no agent", err, started)
				}
				return
			}
			if err != nil || !started || out.Result != "exited" {
				t.Errorf("Run = %v, %q, agent started %v (notes %v)", err, out.Result, started, out.Notes)
			}
			if logs := countPrefix(asked, "logs"); logs != 1 { // the finish's, not a ready wait
				t.Errorf("calls %q: netd's output followed %d times, want once (its finish)", asked, logs)
			}
		})
	}
}

// TestSpareLookAheadOfAnotherRecord: answers looked ahead for a spare that is no longer the
// recorded one (another spare was recorded meanwhile) are not taken: the claim asks about the
// spare it claims.
func TestSpareLookAheadOfAnotherRecord(t *testing.T) {
	fake := dockertest.New(t)
	s, _ := spareFixture(t, fake)
	startSpare(t, s, fake)
	fake.On("container inspect --format {{json .}} spare-id", inspectReply("spare-id", "sha256:netd1", true)).Once()
	fake.On("exec --user 0 spare-id", docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)}).Once()
	ahead, stop := LookAhead(context.Background(), s.Docker, s.Project)
	defer stop()
	<-ahead.done
	os.Remove(s.spareFile())
	rec := startSpare(t, s, fake) // a new spare: same fake container ID, another run id
	fake.On("container inspect --format {{json .}} "+rec.Netd, inspectReply("spare-id", "sha256:netd1", true)).Once()
	out := &Outcome{}
	if !s.claimSpare(context.Background(), Options{Ahead: ahead, NetdImageID: "sha256:netd1"}, out) || out.ID != rec.ID {
		t.Fatalf("the new spare was not claimed: %+v", out)
	}
	if out.readBack != nil {
		t.Errorf("the claim took a read-back made for another spare")
	}
}

func countPrefix(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}
