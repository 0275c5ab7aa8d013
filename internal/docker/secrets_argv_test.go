package docker_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/secrets"
)

// recordingDocker writes a `docker` that appends its own /proc/<pid>/cmdline (what a process
// list shows of it) to argv and its stdin to stdin, both in dir, and prints a container id.
func recordingDocker(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "docker")
	script := fmt.Sprintf("#!/bin/sh\ntr '\\000' ' ' < /proc/$$/cmdline >> %[1]s/argv\necho >> %[1]s/argv\ncat >> %[1]s/stdin\necho c0ffee\n", dir)
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// TestExecKeepsSecretsOutOfArgv sends a secret down every path by which abox hands one to the
// docker CLI (a Docker Desktop secret, the gateway token to the health probe, the agent's
// attached secrets to `docker create`, a value to `docker exec`), through the real ExecRunner
// to a real process, and reads that process's command line from /proc as another user would:
// each secret must arrive on stdin and appear in no command line, nor in the --verbose trace.
func TestExecKeepsSecretsOutOfArgv(t *testing.T) {
	bin, dir := recordingDocker(t)
	var trace bytes.Buffer
	c := docker.NewClient(&docker.ExecRunner{Binary: bin}, &trace)
	ctx := context.Background()
	sent := map[string]func(secret string) error{
		"desktop secret": func(s string) error {
			return (&secrets.DesktopStore{Docker: c}).Set(ctx, "api_key", []byte(s))
		},
		"gateway token to the probe": func(s string) error {
			_, err := (&gateway.Manager{Docker: c}).Probe(ctx, "default", "abox-net", "abox-netd:1", 8811, s)
			if err != nil && !strings.Contains(err.Error(), "printed no result") { // the recorder prints no probe result
				return err
			}
			return nil
		},
		"attached secrets to create": func(s string) error {
			_, err := c.CreateWithInput(ctx, []string{"create", "--name", "agent", "--env-file", "/dev/stdin", "img"}, strings.NewReader("API_KEY="+s+"\n"))
			return err
		},
		"exec with input": func(s string) error {
			_, err := c.Exec(ctx, "netd", "", []string{"abox", "netd", "set-token"}, strings.NewReader(s))
			return err
		},
	}
	var all []string
	for name, send := range sent {
		secret := "s3cr3t-" + strings.ReplaceAll(name, " ", "-")
		all = append(all, secret)
		if err := send(secret); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	argv, err1 := os.ReadFile(filepath.Join(dir, "argv"))
	stdin, err2 := os.ReadFile(filepath.Join(dir, "stdin"))
	if err1 != nil || err2 != nil || bytes.Count(argv, []byte("\n")) != len(sent) {
		t.Fatalf("the recording docker ran %d times (%v, %v), want %d", bytes.Count(argv, []byte("\n")), err1, err2, len(sent))
	}
	for _, secret := range all {
		if !bytes.Contains(stdin, []byte(secret)) {
			t.Errorf("%s never reached docker's stdin", secret)
		}
		if bytes.Contains(argv, []byte(secret)) {
			t.Errorf("%s is in a docker command line:\n%s", secret, argv)
		}
		if strings.Contains(trace.String(), secret) {
			t.Errorf("%s is in the --verbose trace:\n%s", secret, trace.String())
		}
	}
}
