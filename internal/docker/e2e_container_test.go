//go:build e2e

package docker_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
)

func TestE2EContainerLifecycle(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	name := e.name("box")
	id := e.startSleeper(ctx, name, "sh", "-c", "echo to-stdout; echo to-stderr >&2; exec sleep 300")

	ct, err := e.c.ContainerInspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if ct.ID != id || !ct.State.Running || ct.State.Pid == 0 || ct.Config.Labels["abox.test.run"] != e.run {
		t.Errorf("ContainerInspect = %+v, want running %s", ct, id)
	}
	list, err := e.c.ContainersByLabel(ctx, map[string]string{"abox.test.run": e.run}, false)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Names[0] != name || list[0].State != "running" {
		t.Errorf("ContainersByLabel = %+v, %v, want the one running container", list, err)
	}

	res, err := e.c.Exec(ctx, name, "1000", []string{"sh", "-c", "id -u; cat"}, strings.NewReader("via-stdin"))
	if err != nil || string(res.Stdout) != "1000\nvia-stdin" {
		t.Errorf("Exec = %q, %v, want uid 1000 and the stdin", res.Stdout, err)
	}
	_, err = e.c.Exec(ctx, name, "", []string{"sh", "-c", "exit 3"}, nil)
	var ee *docker.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("Exec(exit 3) = %v, want ExitError code 3", err)
	}

	var logs bytes.Buffer
	if err := e.c.Logs(ctx, name, &logs); err != nil || !strings.Contains(logs.String(), "to-stdout") ||
		!strings.Contains(logs.String(), "to-stderr") {
		t.Errorf("Logs = %q, %v, want both streams", logs.String(), err)
	}

	testCopyFrom(t, e, name)

	netName := e.name("net")
	if _, err := e.c.NetworkCreate(ctx, netName, e.labels); err != nil {
		t.Fatal(err)
	}
	if err := e.c.NetworkConnect(ctx, netName, name, "alias-a"); err != nil {
		t.Fatal(err)
	}
	ct, _ = e.c.ContainerInspect(ctx, name)
	if aliases := ct.NetworkSettings.Networks[netName].Aliases; !contains(aliases, "alias-a") {
		t.Errorf("aliases on %s = %q, want alias-a", netName, aliases)
	}

	start := time.Now()
	if err := e.c.Stop(ctx, name, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ct, _ = e.c.ContainerInspect(ctx, name)
	t.Logf("stopped with --init in %v: status %s, exit %d", time.Since(start), ct.State.Status, ct.State.ExitCode)
	if ct.State.Running {
		t.Errorf("still running after Stop")
	}
	if err := e.c.Remove(ctx, true, true, name); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ContainerInspect(ctx, name); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("ContainerInspect(removed) = %v, want ErrNotFound", err)
	}
	if err := e.c.NetworkRemove(ctx, netName); err != nil {
		t.Error(err)
	}
}

// testCopyFrom plants a tree with a symlink to a host secret and a FIFO, and checks that only the
// regular files and directories come out.
func testCopyFrom(t *testing.T, e *e2eEnv, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := e.c.Exec(ctx, name, "", []string{"sh", "-c",
		"mkdir -p /out/sub && echo hi > /out/a.txt && echo x > /out/sub/b && " +
			"ln -s /etc/shadow /out/link && ln -s ../../../../../../tmp /out/up && mkfifo /out/fifo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	if err := e.c.CopyFrom(ctx, name, "/out", dest); err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	var got []string
	_ = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dest, p)
		if rel == "." {
			return err
		}
		info, _ := d.Info()
		got = append(got, rel+" "+info.Mode().String())
		return err
	})
	want := "out drwx------,out/a.txt -rw-------,out/sub drwx------,out/sub/b -rw-------"
	if strings.Join(got, ",") != want {
		t.Errorf("extracted %q, want %q", strings.Join(got, ","), want)
	}
	if err := e.c.CopyFrom(ctx, name, "/nope", dest); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("CopyFrom(missing) = %v, want ErrNotFound", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestE2EFollowLogs(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	argv := append([]string{"run", "--pull", "never", "--init", "--name", e.name("logs")}, e.labelFlags()...)
	argv = append(argv, e.image, "sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.3; done")
	if _, err := e.c.RunDetached(ctx, argv); err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.c.FollowLogs(tctx, e.name("logs"), &w); err != nil || tctx.Err() != nil {
		t.Fatalf("FollowLogs = %v (ctx %v), want it to end with the container", err, tctx.Err())
	}
	if w.String() != "line 1\nline 2\nline 3\n" {
		t.Errorf("followed %q", w.String())
	}

	e.startSleeper(ctx, e.name("forever"))
	short, cancel2 := context.WithTimeout(ctx, time.Second)
	defer cancel2()
	start := time.Now()
	if err := e.c.FollowLogs(short, e.name("forever"), &w); err != nil {
		t.Errorf("FollowLogs after ctx ended = %v, want nil", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("FollowLogs took %v to notice the end of ctx", d)
	}
}

// TestE2ECancelKillsRun cancels an attached `docker run` and checks that the CLI is gone
// promptly. Without --init, sleep as PID 1 ignores the SIGTERM that `docker run` forwards, so
// the CLI needs the SIGKILL after the grace period and the container keeps running; with --init
// the container exits at once and --rm removes it.
func TestE2ECancelKillsRun(t *testing.T) {
	e := newE2E(t)
	for _, tc := range []struct {
		name        string
		init        bool
		wantRunning bool
	}{{"no-init", false, true}, {"init", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			name := e.name("cancel-" + tc.name)
			argv := append([]string{"run", "--pull", "never", "--rm", "--name", name}, e.labelFlags()...)
			if tc.init {
				argv = append(argv, "--init")
			}
			argv = append(argv, e.image, "sleep", "100")
			ctx, cancel := context.WithCancel(context.Background())
			go cancelWhenRunning(e, name, cancel)
			start := time.Now()
			res, err := e.c.Run(ctx, docker.Invocation{Args: argv})
			elapsed := time.Since(start)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want context.Canceled", err)
			}
			t.Logf("canceled docker run returned after %v with exit code %d", elapsed, res.ExitCode)
			if elapsed > 30*time.Second {
				t.Errorf("Run took %v", elapsed)
			}
			time.Sleep(time.Second) // let --rm finish
			ct, err := e.c.ContainerInspect(context.Background(), name)
			running := err == nil && ct.State.Running
			if running != tc.wantRunning {
				t.Errorf("container running after cancel = %v, want %v (inspect: %v)", running, tc.wantRunning, err)
			}
		})
	}
}

// cancelWhenRunning calls cancel once the named container runs.
func cancelWhenRunning(e *e2eEnv, name string, cancel context.CancelFunc) {
	defer cancel()
	quiet := docker.NewClient(&docker.ExecRunner{}, nil)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if ct, err := quiet.ContainerInspect(context.Background(), name); err == nil && ct.State.Running {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
