package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/statefs"
)

// A spare netd is a project's netd started ahead of its next run, so that the run does not wait
// for netd's start-up. It is started after a run, from nothing (its own container, network
// namespace, ruleset, resolver and logs), and is used by at most one run: the run that claims it
// removes its record first, and it is never handed to a second one. No agent ever joined it
// before its run: a spare has no agent, and nothing of the run before reaches it.
//
// A run uses the spare only when it is exactly the netd the run would start itself: the same
// argv (runspec.json's, completed with the spare's run id and today's gateway address), the
// same image ID, and the same content of every file it bind-mounts (its policy and
// resolv.conf). Anything else, or a spare that is not running, is removed and the run starts its
// own netd. Either way the run then verifies netd as always: the ready line, the runtime canary
// and the read-back of the loaded ruleset.

// spareRecord is what spare-netd.json says of the spare.
type spareRecord struct {
	ID          string    `json:"run_id"`
	Netd        string    `json:"netd"`
	ContainerID string    `json:"container_id"`
	Image       string    `json:"image_id"`
	Argv        []string  `json:"argv"`
	Mounts      string    `json:"mounts_sha256"` // digest of the bind-mounted files' content
	Started     time.Time `json:"started"`
	// ContainerStarted is the container's State.StartedAt when its ready line was seen: a spare
	// started again since (a restart makes a new start) is not the one seen ready.
	ContainerStarted string `json:"container_started_at"`
}

// spareTimeout bounds a spare's start-up, from when it starts.
const spareTimeout = time.Minute

// spareRecordFile, in the project's state directory, records its spare netd.
const spareRecordFile = "spare-netd.json"

// spareStartingFile, beside it, names the netd a spare-netd process is starting: written before
// its `docker run`, removed once the spare is recorded or removed. One left behind names the
// container of a process that died in between (killed, or the host went down), which no record
// names; the next start removes it.
const spareStartingFile = "spare-netd.starting"

func (s *Sandbox) spareFile() string    { return filepath.Join(s.Project.Dir, spareRecordFile) }
func (s *Sandbox) startingFile() string { return filepath.Join(s.Project.Dir, spareStartingFile) }

// Two locks guard a project's spare. The record lock (spare-netd.json.lock) is held only for
// moments: to read, write or remove the record and check the container it names, so a run that
// claims the spare waits for it (up to [recordLockWait]) rather than starting its own netd. The
// start lock (spare-netd.start.lock) is held by the one spare-netd process that is starting a
// spare, for all of its start-up, and by `abox nuke`.

// recordLockWait bounds how long a run waits for the record lock: its holders hold it for a
// few docker inspects.
const recordLockWait = 2 * time.Second

// lockSpare takes the record lock, waiting up to [recordLockWait]; ok is false when another
// abox still holds it.
func (s *Sandbox) lockSpare() (unlock func(), ok bool, err error) {
	return lockFile(s.Project, spareRecordFile+".lock", recordLockWait)
}

// lockStart takes the start lock without waiting; ok is false while another abox starts a
// spare (or nuke holds it).
func (s *Sandbox) lockStart() (unlock func(), ok bool, err error) {
	return lockFile(s.Project, spareStartLock, 0)
}

// spareStartLock is the start lock's file, in the project's state directory.
const spareStartLock = "spare-netd.start.lock"

// lockFile takes the lock file name of the project's state directory, trying for up to wait.
func lockFile(proj paths.Project, name string, wait time.Duration) (unlock func(), ok bool, err error) {
	if err := statefs.MkdirAll(proj.Dir); err != nil {
		return nil, false, err
	}
	f, err := os.OpenFile(filepath.Join(proj.Dir, name), os.O_RDWR|os.O_CREATE, statefs.PrivateMode)
	if err != nil {
		return nil, false, err
	}
	deadline := time.Now().Add(wait)
	for {
		err = flock(f, unix.LOCK_EX)
		if !errors.Is(err, unix.EWOULDBLOCK) || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { flock(f, unix.LOCK_UN); f.Close() }, true, nil
}

// HoldSpares takes both of the project's spare locks for `abox nuke`, waiting up to wait for a
// spare-netd process that is starting a spare to finish: while they are held no spare starts,
// so the containers nuke lists are all there will be, and the record it removes is the last.
func HoldSpares(proj paths.Project, wait time.Duration) (release func(), err error) {
	start, ok, err := lockFile(proj, spareStartLock, wait)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("a spare netd of the project is still being started after %s", wait)
	}
	record, ok, err := lockFile(proj, spareRecordFile+".lock", wait)
	if err != nil || !ok {
		start()
		if err == nil {
			err = fmt.Errorf("the spare netd's record is still in use after %s", wait)
		}
		return nil, err
	}
	return func() { record(); start() }, nil
}

// SpareHoldWait is how long [HoldSpares] waits for a spare's start-up: all of it, and its removal.
const SpareHoldWait = spareTimeout + removeTimeout + 10*time.Second

// sweepStarting removes the container named by a starting marker left by a spare-netd process
// that died, unless it is the spare recorded (it died after the record, before the marker went).
// The marker stays while the container could not be removed, so that nothing overwrites it.
func (s *Sandbox) sweepStarting(ctx context.Context) error {
	b, err := os.ReadFile(s.startingFile())
	if err != nil {
		return nil
	}
	name := strings.TrimSpace(string(b))
	if rec, err := s.readSpare(); name != "" && (err != nil || rec.Netd != name) {
		if err := s.removeSpare(ctx, &spareRecord{Netd: name}); err != nil {
			return fmt.Errorf("removing the spare netd %s a spare-netd process left: %w", name, err)
		}
	}
	return os.Remove(s.startingFile())
}

// StartSpare starts the project's spare netd for its next run, unless one is recorded and
// running, or another abox is starting one. o gives what completes netd's argv (the gateway's
// address). A spare that does not start, get ready or pass the read-back of its ruleset is
// removed and not recorded.
func (s *Sandbox) StartSpare(ctx context.Context, o Options) error {
	unlockStart, ok, err := s.lockStart()
	if err != nil || !ok {
		return err
	}
	defer unlockStart()
	if err := s.sweepStarting(ctx); err != nil {
		return err
	}
	if have, err := s.haveSpare(ctx); have || err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, spareTimeout)
	defer cancel()
	out := &Outcome{ID: NewRunID()}
	argv := s.netdArgv(o, out)
	name := argv[indexAfter(argv, "--name")]
	rec := &spareRecord{ID: out.ID, Netd: name, Argv: argv, Started: s.Now().UTC()}
	if rec.Mounts, err = mountsDigest(argv); err != nil {
		return err
	}
	if err := statefs.WriteFile(s.startingFile(), []byte(name+"\n"), statefs.PrivateMode); err != nil {
		return err
	}
	defer os.Remove(s.startingFile()) // after the record, or after the removal of what failed
	if _, err := s.Docker.RunDetached(ctx, argv); err != nil {
		s.removeSpare(context.WithoutCancel(ctx), rec)
		return fmt.Errorf("starting the spare netd: %w", err)
	}
	if err := s.readySpare(ctx, rec); err != nil {
		s.removeSpare(context.WithoutCancel(ctx), rec)
		return err
	}
	if err := s.recordSpare(rec); err != nil {
		s.removeSpare(context.WithoutCancel(ctx), rec)
		return err
	}
	return nil
}

// haveSpare reports whether a spare is recorded and running; one recorded but gone is removed
// with its record. It holds the record lock while it looks.
func (s *Sandbox) haveSpare(ctx context.Context) (bool, error) {
	unlock, ok, err := s.lockSpare()
	if err != nil || !ok {
		return !ok && err == nil, err // a run is claiming it: none to start now
	}
	defer unlock()
	rec, err := s.readSpare()
	if err != nil {
		return false, nil
	}
	if c, err := s.Docker.ContainerInspect(ctx, rec.Netd); err == nil && c.State.Running && c.ID == rec.ContainerID {
		return true, nil
	}
	s.removeSpare(ctx, rec)
	os.Remove(s.spareFile())
	return false, nil
}

// recordSpare writes the spare's record under the record lock.
func (s *Sandbox) recordSpare(rec *spareRecord) error {
	unlock, ok, err := s.lockSpare()
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("the spare netd's record stayed locked")
	}
	defer unlock()
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return statefs.WriteFile(s.spareFile(), append(b, '\n'), statefs.PrivateMode)
}

// readySpare waits for the spare's ready line, reads its ruleset back and notes its container and
// image IDs.
func (s *Sandbox) readySpare(ctx context.Context, rec *spareRecord) error {
	if err := s.waitReady(ctx, rec.Netd, spareTimeout); err != nil {
		return fmt.Errorf("the spare netd did not become ready: %w", err)
	}
	res, err := s.Docker.Exec(ctx, rec.Netd, "0", readBackArgv, nil)
	if err != nil {
		return fmt.Errorf("reading the spare netd's ruleset: %w", err)
	}
	if err := policy.CompareRuleset(s.Baseline, res.Stdout); err != nil {
		return fmt.Errorf("the spare netd's ruleset differs from netpolicy.nft: %w", err)
	}
	c, err := s.Docker.ContainerInspect(ctx, rec.Netd)
	if err != nil {
		return err
	}
	rec.ContainerID, rec.Image, rec.ContainerStarted = c.ID, c.Image, c.State.StartedAt
	return nil
}

// claimSpare hands the recorded spare to this run, if it is the netd the run would start: it
// then sets the run's id (and so its container names) to the spare's. The record is removed
// whatever happens, and a spare that does not fit is removed too, with a note that says why.
// What [LookAhead] already asked of this very record is taken instead of asking again.
func (s *Sandbox) claimSpare(ctx context.Context, o Options, out *Outcome) bool {
	if o.ID != "" { // the run's id was chosen before the run (an isolated run's clone is under it)
		return false
	}
	unlock, ok, err := s.lockSpare()
	if err != nil || !ok {
		return false
	}
	defer unlock()
	rec, err := s.readSpare()
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		os.Remove(s.spareFile())
		out.note("the spare netd's record is unreadable (%v); this run started its own", err)
		return false
	}
	ahead := o.Ahead.of(rec)
	why := s.spareMismatch(ctx, o, rec, ahead)
	if why == "" {
		// The run owns the spare before its record goes: at no moment is it nobody's.
		out.ID = rec.ID
		if err := s.own(out); err != nil {
			out.ID, why = "", err.Error()
		}
	}
	os.Remove(s.spareFile()) // used once, whatever follows
	if why != "" {
		out.note("the spare netd was not used (%s) and was removed; this run started its own", why)
		s.removeSpare(context.WithoutCancel(ctx), rec)
		return false
	}
	out.Spare = rec.Started
	if ahead != nil && ahead.rulesetErr == nil {
		out.readBack = ahead.ruleset
	}
	return true
}

// spareMismatch says how the spare differs from the netd this run would start, or "". ahead,
// when not nil, holds the container's inspection made ahead of the run.
func (s *Sandbox) spareMismatch(ctx context.Context, o Options, rec *spareRecord, ahead *SpareAhead) string {
	if !validRunID(rec.ID) {
		return "its run id is not one abox makes"
	}
	want := s.netdArgv(o, &Outcome{ID: rec.ID})
	if !slices.Equal(want, rec.Argv) {
		return "its argv is not this run's: runspec.json or the gateway's address changed"
	}
	digest, err := mountsDigest(want)
	if err != nil || digest != rec.Mounts {
		return "the files it mounts changed since it started"
	}
	c, imageID, err := s.spareState(ctx, o, rec, ahead)
	if err != nil || !c.State.Running || c.ID != rec.ContainerID {
		return "it is not running"
	}
	if rec.ContainerStarted == "" || c.State.StartedAt != rec.ContainerStarted {
		return "it was started again since it was seen ready"
	}
	if imageID == "" || imageID != rec.Image || c.Image != rec.Image {
		return "its image is not the netd image of today"
	}
	return ""
}

// spareState inspects the spare's container, or takes the inspection made ahead, and finds the
// ID of today's netd image: the preflight's, else inspected beside the container (one docker
// call's time, not two, on the run's path).
func (s *Sandbox) spareState(ctx context.Context, o Options, rec *spareRecord, ahead *SpareAhead) (*docker.Container, string, error) {
	imageID := o.NetdImageID
	var imgErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if imageID == "" {
			var img *docker.Image
			if img, imgErr = s.Docker.ImageInspect(ctx, s.Spec.Netd.Image); imgErr == nil {
				imageID = img.ID
			}
		}
	}()
	var c *docker.Container
	var err error
	if ahead != nil && ahead.containerErr == nil {
		c = ahead.container
	} else {
		c, err = s.Docker.ContainerInspect(ctx, rec.Netd)
	}
	<-done
	if err == nil {
		err = imgErr
	}
	return c, imageID, err
}

// SpareAhead is what a run asks of the project's recorded spare netd before its preflight has
// decided anything ([LookAhead]): the spare's container inspected, and its loaded ruleset read
// back, both by the recorded container ID. Neither changes anything. A run that then claims that
// same record ([Sandbox.claimSpare]) takes the answers instead of asking again; the decisions are
// the same and made in the same order, the docker calls only made earlier, beside the
// preflight's own.
type SpareAhead struct {
	rec          *spareRecord
	done         chan struct{}
	container    *docker.Container
	containerErr error
	ruleset      []byte
	rulesetErr   error
}

// LookAhead starts, in the background, the inspection and the ruleset read-back of the project's
// recorded spare netd, if there is one; nil when there is none. Stop cancels what still runs.
func LookAhead(ctx context.Context, d *docker.Client, proj paths.Project) (ahead *SpareAhead, stop func()) {
	sb := &Sandbox{Docker: d, Project: proj}
	rec, err := sb.readSpare() // written whole by a rename: never half a record
	if err != nil || !validRunID(rec.ID) || rec.ContainerID == "" {
		return nil, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &SpareAhead{rec: rec, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		a.container, a.containerErr = d.ContainerInspect(ctx, rec.ContainerID)
	}()
	go func() {
		defer wg.Done()
		res, err := d.Exec(ctx, rec.ContainerID, "0", readBackArgv, nil)
		a.ruleset, a.rulesetErr = res.Stdout, err
	}()
	go func() { wg.Wait(); close(a.done) }()
	return a, cancel
}

// of returns a, once its calls have ended, when it was made for rec; nil otherwise.
func (a *SpareAhead) of(rec *spareRecord) *SpareAhead {
	if a == nil || a.rec.ID != rec.ID || a.rec.ContainerID != rec.ContainerID {
		return nil
	}
	<-a.done
	return a
}

func (s *Sandbox) readSpare() (*spareRecord, error) {
	b, err := os.ReadFile(s.spareFile())
	if err != nil {
		return nil, err
	}
	var rec spareRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// removeSpare removes the spare's container, bounded from when it starts.
func (s *Sandbox) removeSpare(ctx context.Context, rec *spareRecord) error {
	if rec.Netd == "" {
		return nil
	}
	rctx, cancel := stepContext(ctx, removeTimeout)
	defer cancel()
	return s.Docker.Remove(rctx, true, true, rec.Netd)
}

// RemoveSpare removes the project's spare netd and its record, if any, for a run of a project
// whose defaults.spare_netd is now off. Without a record it touches nothing; while another abox
// holds the spare lock it leaves the spare to it.
func (s *Sandbox) RemoveSpare(ctx context.Context) error {
	if _, err := os.Stat(s.spareFile()); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, ok, err := s.lockSpare()
	if err != nil || !ok {
		return err
	}
	defer unlock()
	rec, err := s.readSpare()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		if err := s.removeSpare(ctx, rec); err != nil {
			return err
		}
	}
	return os.Remove(s.spareFile())
}

// forgetSpare removes the spare record if it names run id: a run that claimed the spare and
// died before it took the record away, whose netd a reap removed.
func (s *Sandbox) forgetSpare(id string) {
	unlock, ok, err := s.lockSpare()
	if err != nil || !ok {
		return
	}
	defer unlock()
	if rec, err := s.readSpare(); err == nil && rec.ID == id {
		os.Remove(s.spareFile())
	}
}

// dropClaimed removes a claimed spare when the run is refused before anything started (there is
// then no teardown to remove it).
func (s *Sandbox) dropClaimed(ctx context.Context, spared bool, out *Outcome) {
	if spared {
		s.removeSpare(context.WithoutCancel(ctx), &spareRecord{Netd: out.Netd})
	}
}

// validRunID reports whether id is 8 lowercase hex digits, as [NewRunID] makes.
func validRunID(id string) bool {
	if len(id) != 8 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// mountsDigest hashes the content of every file and directory netd's argv bind-mounts, so that
// a spare started before an edit of its policy is not used after it.
func mountsDigest(argv []string) (string, error) {
	h := sha256.New()
	for i, a := range argv {
		if a != "--mount" || i+1 == len(argv) {
			continue
		}
		src, ok := bindSource(argv[i+1])
		if !ok {
			continue
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00%s\x00", p, d.Type())
			if d.Type().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				fmt.Fprintf(h, "%d\x00", len(b))
				h.Write(b)
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("reading what netd mounts: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// bindSource returns the source of a --mount value of type bind.
func bindSource(m string) (string, bool) {
	var src string
	bind := false
	for _, kv := range strings.Split(m, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "type":
			bind = v == "bind"
		case "source", "src":
			src = v
		}
	}
	return src, bind && src != ""
}

// SpawnAfterRun starts `exe spare-netd` for the project, detached: in its own session, with no
// terminal, its output in the project's spare-netd.log. It removes the netds the run retired
// ([RemoveRetired]) and, when config.yaml asks for one, starts the next run's spare netd. It
// outlives the abox that starts it, which does not wait for it; a run that finds no spare ready
// starts its own netd.
func SpawnAfterRun(exe string, p paths.Project) error {
	log, err := os.OpenFile(filepath.Join(p.Dir, "spare-netd.log"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, statefs.PrivateMode)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(exe, "spare-netd", "--dir", p.Workspace)
	// Not in the workspace, which the agent has just written: the preflight's host probes
	// (npm's and go's configuration) would read a file it planted there.
	cmd.Dir = p.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
