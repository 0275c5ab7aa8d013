package netd

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"golang.org/x/sys/unix"
)

// procChild is a serving child the kernel describes: a real process (sleep) running as uid,
// whatever the supervisor asked for,
// with the ambient capabilities given (which survive the change of uid) and no_new_privs when
// nnp is set. The supervisor reads its /proc status as it reads the real child's. It keeps its
// end of the control channel in ctl, so a test can see what the supervisor sent it.
type procChild struct {
	uid     int
	ambient []uintptr
	nnp     bool
	ctl     *os.File
	cmd     *exec.Cmd
}

func (c *procChild) start(ctl *os.File, _ []*os.File, _ int) (int, <-chan error, func(), error) {
	fd, err := syscall.Dup(int(ctl.Fd()))
	if err != nil {
		return 0, nil, nil, err
	}
	c.ctl = os.NewFile(uintptr(fd), "control")
	uid := c.uid
	c.cmd = exec.Command("sleep", "60")
	c.cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
		AmbientCaps: c.ambient,
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread and its no_new_privs end with it
		if c.nnp {
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				started <- err
				return
			}
		}
		started <- c.cmd.Start()
	}()
	if err := <-started; err != nil {
		return 0, nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	return c.cmd.Process.Pid, done, func() { c.cmd.Process.Kill() }, nil
}

func (c *procChild) stop() {
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
	if c.ctl != nil {
		c.ctl.Close()
	}
}

// needRoot: starting a process as another uid, or with a capability, takes root. CI runs the
// unit tests as root (it starts its own Docker daemon).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("starting a child as another uid needs root")
	}
}

// The kernel's own account of a real process is the oracle: a child started the way
// execChild starts it passes, and each way of keeping a privilege is refused.
func TestCheckUnprivileged(t *testing.T) {
	needRoot(t)
	netd := policy.NetdUID
	for _, tc := range []struct {
		name  string
		child procChild
		want  string
	}{
		{"dropped to netd's uid, no_new_privs", procChild{uid: netd, nnp: true}, ""},
		{"kept a capability", procChild{uid: netd, nnp: true, ambient: []uintptr{unix.CAP_NET_BIND_SERVICE}}, "holds capabilities"},
		{"may gain privileges on execve", procChild{uid: netd}, "NoNewPrivs"},
		{"another uid than the policy's", procChild{uid: netd + 1, nnp: true}, "runs with Uid"},
		{"still root", procChild{uid: 0, nnp: true}, "runs with Uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.child
			ctl, peer, err := socketPair()
			if err != nil {
				t.Fatal(err)
			}
			defer ctl.Close()
			defer peer.Close()
			pid, _, _, err := c.start(peer, nil, netd)
			if err != nil {
				t.Fatal(err)
			}
			defer c.stop()
			err = checkChild("/proc", pid, netd)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("checkChild = %v, want it accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkChild = %v, want a refusal with %q", err, tc.want)
			}
		})
	}
	if err := checkUnprivileged("Uid:\t0\t0\t0\t0\n", 0); err == nil {
		t.Error("a child meant to run as root accepted")
	}
	if err := checkUnprivileged("Name:\tsleep\n", policy.NetdUID); err == nil {
		t.Error("a status without Uid, Gid or capability lines accepted")
	}
}

// TestSupervisorRefusesPrivilegedChild runs the whole supervisor with a real child that kept a
// capability: netd never becomes ready, and the child never sees the policy or the token.
func TestSupervisorRefusesPrivilegedChild(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	writePolicy(t, dir, "git.example.com:22")
	os.WriteFile(filepath.Join(dir, policy.RulesFile), policy.Ruleset(policy.NetdUID), 0o644)
	os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret-token\n"), 0o600)
	child := &procChild{uid: policy.NetdUID, nnp: true, ambient: []uintptr{unix.CAP_NET_BIND_SERVICE}}
	defer child.stop()
	out := &syncBuffer{}
	o := options{dir: dir, logDir: filepath.Join(t.TempDir(), "logs"), tokenFile: filepath.Join(dir, "token")}
	s := newSupervisor(o, okNFT(t), child, selfTest{}, out)
	result := make(chan error, 1)
	go func() { result <- s.run(context.Background(), make(chan os.Signal)) }()
	select {
	case err := <-result:
		if err == nil || !strings.Contains(err.Error(), "holds capabilities") {
			t.Errorf("run = %v, want a refusal of the child's capabilities", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor served a child that kept a capability")
	}
	if strings.Contains(out.String(), `"ready"`) {
		t.Errorf("ready with a privileged child:\n%s", out)
	}
	child.ctl.SetReadDeadline(time.Now().Add(2 * time.Second))
	if line, _ := bufio.NewReader(child.ctl).ReadString('\n'); line != "" {
		t.Errorf("the refused child was sent %q", line)
	}
}
