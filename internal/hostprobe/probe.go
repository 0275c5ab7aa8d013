// Package hostprobe asks the host's own tools how they are configured, so that abox honours the
// mirrors a machine already uses instead of naming a registry itself: npm's registry for an
// image that installs Claude Code from npm, go's module proxy and checksum database for the
// egress `abox init` suggests. It also finds programs on PATH for doctor.
//
// Every question is a method of [Probe], which callers take as a value: [System] runs the real
// tools, and tests pass a fake instead of changing PATH or a package variable. What the answers
// are used for, and what an empty answer means, is the caller's business.
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
}

// System is the [Probe] that runs the host's npm and go, found on PATH.
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

// run runs name with args and returns its stdout. Its stderr, when it fails, ends the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
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
