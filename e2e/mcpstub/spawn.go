//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dockerSpawner starts servers as docker/mcp-gateway does: it execs the docker CLI (so the
// stub's image needs one, and the daemon's socket at /var/run/docker.sock: the CLI gets no
// DOCKER_HOST) and speaks MCP over the child's stdio.
type dockerSpawner struct {
	networks []string // the gateway container's own networks ([guessNetworks])
	cpus     int      // --cpus
	memory   string   // --memory
	dind     bool     // DOCKER_MCP_IN_DIND=1
	secrets  map[string]string
	stderr   io.Writer // the servers' stderr, each line prefixed with its server's name
}

func (d dockerSpawner) spawn(ctx context.Context, s spawnedServer) (mcp.Transport, []string, error) {
	args, env := d.runArgs(s)
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = commandEnv(env)
	if d.stderr != nil {
		cmd.Stderr = &prefixWriter{w: d.stderr, prefix: "- " + s.name + ": "}
	}
	return &mcp.CommandTransport{Command: cmd}, append([]string{"docker"}, args...), nil
}

// runArgs is the real gateway's argv (clientpool.go: baseArgs, argsAndEnv) for s, and the
// environment of the docker CLI that carries the values of its -e NAME flags: secret and env
// values never appear in argv. A secret missing from --secrets is <UNKNOWN>. The stub reads no
// --config, so a {{…}} template in env or command is empty, and an empty env value drops the
// variable, as the real gateway in a container without --config does; $VAR expands from the
// server's own secrets and env. Volumes are not supported.
func (d dockerSpawner) runArgs(s spawnedServer) (args, env []string) {
	args = []string{"run", "--rm", "-i", "--init", "--security-opt", "no-new-privileges"}
	if d.cpus > 0 {
		args = append(args, "--cpus", strconv.Itoa(d.cpus))
	}
	if d.memory != "" {
		args = append(args, "--memory", d.memory)
	}
	args = append(args, "--pull", "never")
	if d.dind {
		args = append(args, "--privileged")
	}
	args = append(args, "-l", "docker-mcp=true", "-l", "docker-mcp-tool-type=mcp",
		"-l", "docker-mcp-name="+s.name, "-l", "docker-mcp-transport=stdio")
	if s.spec.DisableNetwork {
		args = append(args, "--network", "none")
	} else {
		for _, n := range d.networks {
			args = append(args, "--network", n)
		}
	}
	for _, sec := range s.spec.Secrets {
		v, ok := d.secrets[sec.Name]
		if !ok {
			v = "<UNKNOWN>"
		}
		args = append(args, "-e", sec.Env)
		env = append(env, sec.Env+"="+v)
	}
	for _, e := range s.spec.Env {
		if v := expandEnv(evalTemplate(e.Value), env); v != "" {
			args = append(args, "-e", e.Name)
			env = append(env, e.Name+"="+v)
		}
	}
	if u := evalTemplate(s.spec.User); safeFlagValue(u) {
		args = append(args, "-u", u)
	}
	for _, h := range s.spec.ExtraHosts {
		if safeFlagValue(h) {
			args = append(args, "--add-host", h)
		}
	}
	args = append(args, s.spec.Image)
	for _, c := range s.spec.Command {
		args = append(args, expandEnv(evalTemplate(c), env))
	}
	return args, env
}

var templateRE = regexp.MustCompile(`\{\{[^}]*\}\}`)

// evalTemplate evaluates the catalog's {{…}} templates against an empty --config: to "".
func evalTemplate(s string) string { return templateRE.ReplaceAllString(s, "") }

// expandEnv expands $VAR and ${VAR} from env (NAME=value entries) only.
func expandEnv(s string, env []string) string {
	return os.Expand(s, func(name string) string {
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, name+"="); ok {
				return v
			}
		}
		return ""
	})
}

// safeFlagValue refuses values docker would read as another flag.
func safeFlagValue(v string) bool { return v != "" && !strings.HasPrefix(v, "-") }

// commandEnv is the docker CLI's environment: PATH and the server's values, nothing else.
func commandEnv(env []string) []string {
	if path := os.Getenv("PATH"); path != "" {
		return append([]string{"PATH=" + path}, env...)
	}
	return env
}

// guessNetworks returns the networks of the container named by this host's name, sorted, as
// the real gateway finds its own with DOCKER_MCP_IN_CONTAINER=1; none when no container has
// that name, and servers then land on docker's default bridge.
func guessNetworks(ctx context.Context) ([]string, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", "container", "inspect", "--format", "{{json .NetworkSettings.Networks}}", host)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "No such container") {
			return nil, nil
		}
		return nil, fmt.Errorf("docker container inspect %s: %w: %s", host, err, strings.TrimSpace(stderr.String()))
	}
	return parseNetworks(out)
}

// parseNetworks returns the sorted names of `docker inspect`'s .NetworkSettings.Networks.
func parseNetworks(data []byte) ([]string, error) {
	var networks map[string]json.RawMessage
	if err := json.Unmarshal(data, &networks); err != nil {
		return nil, fmt.Errorf("networks %q: %w", data, err)
	}
	return slices.Sorted(maps.Keys(networks)), nil
}

// prefixWriter writes each line with a prefix; a write need not end a line.
type prefixWriter struct {
	w       io.Writer
	prefix  string
	midLine bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !p.midLine {
			out = append(out, p.prefix...)
		}
		out = append(out, line...)
		p.midLine = line[len(line)-1] != '\n'
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
