//go:build e2e

package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Result is the outcome of one command.
type Result struct {
	Stdout, Stderr string
	ExitCode       int
}

// OK reports whether the command exited 0.
func (r Result) OK() bool { return r.ExitCode == 0 }

// String summarises r for failure messages.
func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
}

// command describes one process to run.
type command struct {
	name  string
	args  []string
	env   []string // nil: inherit
	dir   string
	stdin io.Reader
}

// run runs c and returns its output. Only a failure to start it is an error; a non-zero exit
// is in the result.
func (c command) run(ctx context.Context) (Result, error) {
	cmd := exec.CommandContext(ctx, c.name, c.args...)
	cmd.Env, cmd.Dir, cmd.Stdin = c.env, c.dir, c.stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := Result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if ctx.Err() != nil {
			return res, fmt.Errorf("%s %s: %w", c.name, strings.Join(c.args, " "), ctx.Err())
		}
	default:
		return res, err
	}
	return res, nil
}

// dockerEnv is the environment of every docker CLI call: the legacy builder (no BuildKit here).
func dockerEnv(extra ...string) []string {
	return append(append(os.Environ(), "DOCKER_BUILDKIT=0"), extra...)
}

// docker runs the docker CLI.
func docker(ctx context.Context, args ...string) (Result, error) {
	return command{name: "docker", args: args, env: dockerEnv()}.run(ctx)
}

// dockerOut runs the docker CLI and returns its trimmed stdout, or an error naming the command
// and its stderr if it fails.
func dockerOut(ctx context.Context, args ...string) (string, error) {
	res, err := docker(ctx, args...)
	if err != nil {
		return "", err
	}
	if !res.OK() {
		return "", fmt.Errorf("docker %s: exit %d: %s", strings.Join(args, " "), res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return strings.TrimSpace(res.Stdout), nil
}

// lines splits command output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
