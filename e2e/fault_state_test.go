//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// Faults of abox's own state: a full disk under it, and state files that no longer parse.

// TestFaultStateDiskFull: abox's state lives on a 64 MiB tmpfs that fills up after a first run.
// A run then refuses to start, as it could not be recorded, with an error naming the full
// disk, and keeps every earlier record intact; an egress change fails the same way. Once space is back, runs work
// and every line of runs.jsonl still parses.
func TestFaultStateDiskFull(t *testing.T) {
	h := harness.Setup(t)
	mnt := filepath.Join(h.Dir, "tiny-state")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "abox-e2e-tiny", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mounting a tmpfs for the state: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	h.StateHome = mnt
	upProject(t, h, "diskfull", nil, "")
	mustAbox(t, h, "run", "echo first")
	project := filepath.Join(mnt, "projects", h.ProjectHash())
	runsBefore := readWorkspace(project, "runs.jsonl")
	approvedBefore := readWorkspace(project, "approved.yaml")
	artifactsBefore := treeDigest(t, filepath.Join(project, "artifacts"))

	filler := fillDisk(t, mnt)
	res := h.Abox("run", "echo second")
	if res.OK() || !strings.Contains(res.Stderr, "error: cannot record a run") ||
		!strings.Contains(res.Stderr, "no space left on device") || crashed(res) {
		t.Errorf("run on a full disk: %s; want an error naming the full disk", res)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	res = h.Abox("egress", "add", "late.test")
	if res.OK() || crashed(res) || !strings.Contains(res.Stderr, "error:") {
		t.Errorf("egress add on a full disk: %s; want a clear error", res)
	}
	if got := readWorkspace(project, "runs.jsonl"); !strings.HasPrefix(got, runsBefore) {
		t.Errorf("runs.jsonl lost its earlier content:\n%q\nwant it to start with\n%q", got, runsBefore)
	}
	if got := readWorkspace(project, "approved.yaml"); got != approvedBefore {
		t.Errorf("approved.yaml = %q, want %q", got, approvedBefore)
	}
	if treeDigest(t, filepath.Join(project, "artifacts")) != artifactsBefore {
		t.Error("the artifacts changed on a full disk")
	}
	if left := stagedFiles(mnt); len(left) != 0 {
		t.Errorf("staged files left on the full disk: %v", left)
	}

	os.Remove(filler)
	// egress add edited the workspace's manifest before the state write failed; approve it.
	mustAbox(t, h, "up", "--yes")
	mustAbox(t, h, "run", "echo third")
	runs := readWorkspace(project, "runs.jsonl")
	for i, l := range strings.Split(strings.TrimSpace(runs), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("runs.jsonl line %d does not parse: %q", i+1, l)
		}
	}
	if res := mustAbox(t, h, "logs", "--runs"); strings.Contains(res.Stderr, "corrupt") {
		t.Errorf("abox logs --runs after the full disk: %s", res)
	}
}

// fillDisk writes a file in dir until the file system is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{0}, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// Fill the last partial page too, one byte at a time up to a bound.
	for i := 0; i < 4096; i++ {
		if _, err := f.Write([]byte{0}); err != nil {
			break
		}
	}
	return p
}

// crashed reports whether abox panicked.
func crashed(r harness.Result) bool {
	return strings.Contains(r.Stderr, "panic:") || strings.Contains(r.Stderr, "goroutine ")
}

// TestFaultCorruptState: each state file abox reads, made unparseable. Where the rest of the
// file is still of use (the append-only logs) the command works and warns naming the file;
// elsewhere it fails with an error naming the file. Nothing crashes, nothing is left running,
// `abox up` repairs what it renders itself, and runs work again.
func TestFaultCorruptState(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "corrupt", nil, "")
	mustAbox(t, h, "run", "claude net dns 127.0.0.1:53 denied.test; true")
	project := filepath.Join(h.StateHome, "projects", h.ProjectHash())
	tests := []struct {
		file    string
		path    string
		garbage string
		append  bool       // to the good content, else instead of it
		warn    [][]string // commands that work and warn naming the file
		fail    []failing  // commands that fail naming the file
		restore bool       // `abox up` does not rebuild it: put the good content back
	}{
		{file: "runs.jsonl", path: filepath.Join(project, "runs.jsonl"), garbage: "{\"id\": \"half a rec\n\x00\x01\xff\n", append: true,
			warn: [][]string{{"logs", "--runs"}}},
		{file: "denied.jsonl", path: filepath.Join(project, "denied.jsonl"), garbage: "not json at all\n", append: true,
			warn: [][]string{{"egress", "list"}}},
		{file: "artifacts.json", path: filepath.Join(project, "artifacts", "artifacts.json"), garbage: "{\"files\": [",
			fail: []failing{{1, []string{"run", "true"}}, {2, []string{"doctor"}}}},
		{file: "approved.yaml", path: filepath.Join(project, "approved.yaml"), garbage: "version: [1\n\t:::",
			fail: []failing{{3, []string{"run", "true"}}}},
		{file: "registry.json", path: filepath.Join(h.StateHome, "gateways", h.Profile, "registry.json"), garbage: "\x00garbage",
			fail: []failing{{1, []string{"up", "--yes"}}, {1, []string{"gateway", "status"}}}, restore: true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			good, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			bad := tc.garbage
			if tc.append {
				bad = string(good) + tc.garbage
			}
			if err := os.WriteFile(tc.path, []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range tc.warn {
				if res := h.Abox(args...); !res.OK() || crashed(res) || !strings.Contains(res.Stderr, tc.file) {
					t.Errorf("abox %s with a corrupt %s: %s; want it to work and warn naming the file", strings.Join(args, " "), tc.file, res)
				}
			}
			for _, f := range tc.fail {
				res := h.Abox(f.args...)
				if res.ExitCode != f.code || crashed(res) || !strings.Contains(res.Stdout+res.Stderr, tc.file) {
					t.Errorf("abox %s with a corrupt %s: %s; want exit %d naming the file", strings.Join(f.args, " "), tc.file, res, f.code)
				}
			}
			if left := projectContainers(h); len(left) != 0 {
				t.Errorf("containers left: %v", left)
			}
			if tc.restore {
				if err := os.WriteFile(tc.path, good, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			mustAbox(t, h, "up", "--yes")
			mustAbox(t, h, "run", "true")
		})
	}
}

// failing is a command expected to fail, and its exit status.
type failing struct {
	code int
	args []string
}
