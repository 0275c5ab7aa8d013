package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/statefs"
)

// Finishing netd, and retiring it
//
// A run's netd used to be stopped before its logs could be copied out: `docker stop` returns
// once the container has exited and Docker has torn down its namespace, mounts and cgroup,
// ~0.1 s of every run spent after the agent was gone. Now, once the agent's container has
// ended, the teardown sends netd [policy.FinishSignal]: netd stops its serving child (the
// gateway sessions closed, the decision logs flushed) and writes its counters exactly as at a
// stop, prints its "finished" line, and idles. The teardown copies the logs out then, and the
// run's summary and record are made from them as before: nothing of the audit trail waits for
// later.
//
// What is left is the removal of a netd that serves nothing. With [Options.Retire] the run
// appends the container's name to the project's retire list (retiredFile) and leaves its
// removal to the after-run process its caller starts ([SpawnAfterRun]), which removes every
// netd on the list ([RemoveRetired]) before it starts the next spare. A list entry stays until
// its container is gone, so a removal cut short (the process killed, the daemon down) is done by
// the next run's after-run process; `abox nuke` removes every container of the project and
// empties the list. Without Retire (doctor's probe sandboxes) the teardown removes netd itself.

// retiredFile, in the project's state directory, lists the finished netds left to remove, one
// container name a line.
const retiredFile = "retired-netd"

// finishTimeout bounds netd's finish, from when it starts: its child's stop (the gateway
// sessions closed within mcpCloseTimeout) and the counters.
const finishTimeout = 30 * time.Second

// finishNetd sends netd the finish signal and waits for its finished line, following its output
// from before the signal so that the line cannot be missed.
func (s *Sandbox) finishNetd(base context.Context, name string) error {
	ctx, cancel := stepContext(base, finishTimeout)
	defer cancel()
	signalled := make(chan error, 1)
	go func() { signalled <- s.Docker.Kill(ctx, name, policy.FinishSignal) }()
	err := s.waitEvent(ctx, name, policy.EventFinished, finishTimeout)
	if serr := <-signalled; err != nil && serr != nil {
		return fmt.Errorf("sending it %s: %v", policy.FinishSignal, serr)
	}
	return err
}

// retire puts netd on the project's retire list, for the after-run process to remove.
func (s *Sandbox) retire(name string) error {
	unlock, err := statefs.Lock(filepath.Join(s.Project.Dir, retiredFile+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return statefs.AppendLine(filepath.Join(s.Project.Dir, retiredFile), []byte(name))
}

// netdName is what a retire list entry must look like: a container name abox gives a netd.
var netdName = regexp.MustCompile(`^abox-netd-[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// RemoveRetired removes the netds on the project's retire list, all at once, and takes off the
// list those that are gone (removed now, or already). An entry that is not a netd's name is
// dropped unread. The list is locked only to read and to rewrite it, never during the removals,
// so that a run that ends meanwhile can add to it.
func RemoveRetired(ctx context.Context, d *docker.Client, proj paths.Project) error {
	names, err := readRetired(proj)
	if err != nil || len(names) == 0 {
		return err
	}
	var mu sync.Mutex
	var gone []string
	var errs []error
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := stepContext(ctx, removeTimeout)
			defer cancel()
			err := d.Remove(rctx, true, true, name) // one already gone is no error
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("removing the finished netd %s: %w", name, err))
				return
			}
			gone = append(gone, name)
		}()
	}
	wg.Wait()
	if err := dropRetired(proj, gone); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// Retired returns the netds on the project's retire list — finished, and not removed yet — and
// when the list was last written (a run adding to it, or a removal taking entries off).
func Retired(proj paths.Project) (names []string, changed time.Time, err error) {
	names, err = readRetired(proj)
	if err != nil || len(names) == 0 {
		return nil, time.Time{}, err
	}
	fi, err := os.Stat(filepath.Join(proj.Dir, retiredFile))
	if err != nil {
		return nil, time.Time{}, err
	}
	return names, fi.ModTime(), nil
}

// readRetired reads the retire list under its lock; entries that are not a netd's name are left
// out.
func readRetired(proj paths.Project) ([]string, error) {
	unlock, err := statefs.Lock(filepath.Join(proj.Dir, retiredFile+".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	b, err := os.ReadFile(filepath.Join(proj.Dir, retiredFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseRetired(bytes.NewReader(b)), nil
}

func parseRetired(r io.Reader) []string {
	var names []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if name := strings.TrimSpace(sc.Text()); netdName.MatchString(name) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// dropRetired rewrites the retire list without gone, keeping what was added since it was read.
func dropRetired(proj paths.Project, gone []string) error {
	unlock, err := statefs.Lock(filepath.Join(proj.Dir, retiredFile+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	path := filepath.Join(proj.Dir, retiredFile)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var keep []byte
	for _, name := range parseRetired(bytes.NewReader(b)) {
		if !slices.Contains(gone, name) {
			keep = append(keep, name+"\n"...)
		}
	}
	if len(keep) == 0 {
		return os.Remove(path)
	}
	return statefs.WriteFile(path, keep, statefs.PrivateMode)
}
