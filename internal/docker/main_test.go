package docker_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker/dockertest"
)

// helperEnv makes the test binary act as a child process instead of running tests: "fake" runs
// dockertest.FakeBinary, "script" runs helperScript on its arguments.
const helperEnv = "ABOX_DOCKER_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "fake":
		dockertest.FakeBinary()
	default:
		os.Exit(helperScript(os.Args[1:]))
	}
}

// helperScript interprets its arguments as a tiny script, so that a test can make the child
// behave as a docker CLI might:
//
//	stdout TEXT | stderr TEXT  print TEXT and a newline
//	cat                        copy stdin to stdout
//	env KEY                    print the value of KEY
//	big N                      write N bytes to stdout and N to stderr, interleaved
//	ignore-term                ignore SIGTERM from now on
//	sleep DURATION             sleep
//	spawn                      start a child sleeping 60s that shares stdout; print its pid
//	spawn-detached             the same, in a new session (out of reach of group signals)
//	exit N                     exit with status N
//	kill-self                  die of SIGKILL
func helperScript(args []string) int {
	for i := 0; i < len(args); i++ {
		arg := func() string { i++; return args[i] }
		switch args[i] {
		case "stdout":
			fmt.Println(arg())
		case "stderr":
			fmt.Fprintln(os.Stderr, arg())
		case "cat":
			_, _ = io.Copy(os.Stdout, os.Stdin)
		case "env":
			fmt.Println(os.Getenv(arg()))
		case "big":
			n, _ := strconv.Atoi(arg())
			writeBig(n)
		case "ignore-term":
			signal.Ignore(syscall.SIGTERM)
		case "sleep":
			d, _ := time.ParseDuration(arg())
			time.Sleep(d)
		case "spawn", "spawn-detached":
			spawn(args[i] == "spawn-detached")
		case "exit":
			n, _ := strconv.Atoi(arg())
			return n
		case "kill-self":
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		default:
			fmt.Fprintf(os.Stderr, "helper: unknown %q\n", args[i])
			return 99
		}
	}
	return 0
}

// writeBig writes n bytes to each of stdout and stderr in alternating 4 KiB chunks, so that a
// reader that drains only one stream would block the writer.
func writeBig(n int) {
	chunk := []byte(strings.Repeat("x", 4095) + "\n")
	for done := 0; done < n; done += len(chunk) {
		_, _ = os.Stdout.Write(chunk)
		_, _ = os.Stderr.Write(chunk)
	}
}

func spawn(detached bool) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "sleep", "60s")
	cmd.Stdout = os.Stdout
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	fmt.Println(cmd.Process.Pid)
}
