package hostprobe

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Probe is what abox asks of the host's tools.
type Probe interface {
	// NPMRegistry returns the registry the host's npm uses (`npm config get registry`),
	// without surrounding space. An error means npm is absent or failed.
	NPMRegistry(ctx context.Context) (string, error)
	// GoEnv returns the values of the named go environment variables (`go env NAME…`), one
	// per name, in order. An error means go is absent or failed.
	GoEnv(ctx context.Context, names ...string) ([]string, error)
	// Resolvers returns the host's upstream DNS servers that netd can ask ("a.b.c.d:53"),
	// from its resolv.conf; nil when there are none.
	Resolvers() []string
}

// System is the [Probe] that runs the host's npm and go, found on PATH, and reads its
// resolv.conf.
type System struct{}

// NPMRegistry implements [Probe].
func (System) NPMRegistry(ctx context.Context) (string, error) {
	out, err := run(ctx, "npm", "config", "get", "registry")
	return strings.TrimSpace(out), err
}

// GoEnv implements [Probe].
func (System) GoEnv(ctx context.Context, names ...string) ([]string, error) {
	out, err := run(ctx, "go", append([]string{"env"}, names...)...)
	if err != nil {
		return nil, err
	}
	vals := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(vals) != len(names) {
		return nil, fmt.Errorf("go env %s: %d values for %d names", strings.Join(names, " "), len(vals), len(names))
	}
	for i, v := range vals {
		vals[i] = strings.TrimSpace(v)
	}
	return vals, nil
}

// LookPath finds a program on PATH, as [exec.LookPath] does.
func LookPath(name string) (string, error) { return exec.LookPath(name) }

// probeDir is where the host's tools are asked, a directory no project is in.
const probeDir = "/"

// run runs name with args and returns its stdout. Its stderr, when it fails, ends the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	// Never in the working directory, which is often the workspace the agent writes: npm reads
	// a project's .npmrc from there (and above), so a planted one would name the registry abox
	// builds Claude Code from. From / the host's own configuration answers: the user's and the
	// global one, and the environment.
	cmd.Dir = probeDir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, firstLine(msg))
		}
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
