package netd

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// execChild starts the serving child by re-executing this binary as `abox netd serve`, as the
// policy's netd uid ([policy.Netd.ServingUID]) with no supplementary groups. Changing uid from root clears every capability
// set but the bounding one, and no_new_privs (which the netd container already sets, and the
// starting thread sets again) keeps any execve from raising one from it. The supervisor checks
// all of this in the child's /proc status before the child gets the policy ([checkUnprivileged]).
type execChild struct {
	upstreamDNS string
	stderr      io.Writer
}

// childArgs is the command line of the serving child: the CLI's hidden command, then Main's
// serve mode.
var childArgs = []string{"abox", "netd", "serve"}

func (e execChild) start(ctl *os.File, logs []*os.File, uid int) (pid int, done <-chan error, kill func(), err error) {
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       append(append([]string{}, childArgs...), "--upstream-dns", e.upstreamDNS),
		Env:        []string{},
		Dir:        "/",
		Stderr:     e.stderr,
		ExtraFiles: append([]*os.File{ctl}, logs...), // fds 3 (control), 4 dns, 5 conn, 6 mcp, 7 logstats, 8 model
		SysProcAttr: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
			Pdeathsig:  syscall.SIGKILL, // the child dies with the supervisor
		},
	}
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child exits, not the process: keep
		// this thread for as long as the child lives.
		// The thread stays locked and so dies with this goroutine, taking its attribute along.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			started <- fmt.Errorf("setting no_new_privs: %w", err)
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return 0, nil, nil, err
	}
	return cmd.Process.Pid, exited, func() { cmd.Process.Kill() }, nil
}
