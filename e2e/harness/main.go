//go:build e2e

package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Labels every harness resource carries.
const (
	LabelTest = "abox.test"     // the test's id
	LabelPID  = "abox.test.pid" // the pid of the test binary, for the sweeper
	LabelName = "abox.test.name"
)

// runID distinguishes this test binary's resources from those of any other run.
var runID = func() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// Main prepares the machine and runs the tests; call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
//
// It runs e2e/setup.sh (as root; otherwise it only checks that docker answers) and sweeps the
// leftovers of test binaries that are no longer running. Builds happen later, on first use.
func Main(m *testing.M) int {
	start := time.Now()
	if err := prepare(); err != nil {
		fmt.Fprintf(os.Stderr, "harness: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	sweep(ctx)
	cancel()
	fmt.Printf("harness: machine ready in %.1fs (run %s)\n", time.Since(start).Seconds(), runID)
	return m.Run()
}

// prepare runs setup.sh. It needs root (it installs packages and starts dockerd); without
// root the daemon must already be running.
func prepare() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if os.Getuid() != 0 || os.Getenv("ABOX_E2E_SKIP_SETUP") == "1" {
		if _, err := dockerOut(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
			return fmt.Errorf("docker is not usable and setup.sh was not run (needs root): %w", err)
		}
		return nil
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	res, err := command{name: "bash", args: []string{filepath.Join(root, "e2e", "setup.sh")},
		env: append(os.Environ(), "ABOX_E2E_CACHE="+cacheDir(root))}.run(ctx)
	fmt.Print(res.Stdout)
	if err != nil || !res.OK() {
		fmt.Fprint(os.Stderr, res.Stderr)
		return fmt.Errorf("e2e/setup.sh failed (%v, exit %d)", err, res.ExitCode)
	}
	return nil
}

// sweep removes containers, networks and volumes labelled by test binaries that have exited,
// together with any container still attached to such a network. Failures are reported, not
// fatal: a leftover must not stop today's run.
func sweep(ctx context.Context) {
	stale := func(kind string) []string {
		out, err := dockerOut(ctx, kind, "ls", "-q", "--filter", "label="+LabelPID,
			"--format", `{{.Name}} {{.Label "`+LabelPID+`"}}`)
		if kind == "container" {
			out, err = dockerOut(ctx, "container", "ls", "-a", "--filter", "label="+LabelPID,
				"--format", `{{.Names}} {{.Label "`+LabelPID+`"}}`)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "harness: sweep: %v\n", err)
			return nil
		}
		var names []string
		for _, l := range lines(out) {
			name, pid, _ := strings.Cut(l, " ")
			if !alive(pid) {
				names = append(names, name)
			}
		}
		return names
	}
	containers, networks, volumes := stale("container"), stale("network"), stale("volume")
	for _, n := range networks {
		if out, err := dockerOut(ctx, "container", "ls", "-aq", "--filter", "network="+n); err == nil {
			containers = append(containers, lines(out)...)
		}
	}
	containers = dedupe(containers)
	removeAll(ctx, []string{"container", "rm", "-f", "-v"}, containers)
	removeAll(ctx, []string{"network", "rm"}, networks)
	removeAll(ctx, []string{"volume", "rm", "-f"}, volumes)
	if n := len(containers) + len(networks) + len(volumes); n > 0 {
		fmt.Printf("harness: swept %d leftovers of earlier runs\n", n)
	}
}

func removeAll(ctx context.Context, cmd, names []string) {
	if len(names) == 0 {
		return
	}
	if _, err := docker(ctx, append(cmd, names...)...); err != nil {
		fmt.Fprintf(os.Stderr, "harness: %s: %v\n", strings.Join(cmd, " "), err)
	}
}

// alive reports whether pid is a running test binary (a go test binary's name ends in .test).
func alive(pid string) bool {
	if _, err := strconv.Atoi(pid); err != nil {
		return false
	}
	exe, err := os.Readlink("/proc/" + pid + "/exe")
	return err == nil && strings.HasSuffix(strings.TrimSuffix(exe, " (deleted)"), ".test")
}
