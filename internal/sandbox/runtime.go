package sandbox

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// The agent's runtime
//
// Under runc the agent's sockets are the host kernel's, in the network namespace it shares with
// netd, so netd's nftables rules apply to every packet by construction. Under another runtime
// that holds only if the runtime hands the agent's sockets to the host kernel: gVisor (runsc)
// does with its --network=host; with its own network stack (--network=sandbox, its default) the
// agent's packets would be built in gVisor and never cross netd's rules. Docker passes a
// runtime's arguments from the daemon's registration, which abox does not write, so a run under
// a runtime other than runc is checked twice before the agent starts:
//
//   - by configuration ([CheckRuntime]): the daemon's registration of the argv's runtime is
//     gVisor (its binary is runsc) and passes it --network=host, and no other network mode
//     ([RunscArgs]);
//   - live (the canary): a throwaway container under that runtime, as the agent's user, joined to
//     netd's namespace as the agent will be, opens a TCP connection netd's ruleset refuses. It
//     must be refused, and netd's "refused tcp" counter, read back with the ruleset, must have
//     counted it: a refusal from anywhere else (the host's own rules refuse that address too)
//     does not count.
//
// Either failing refuses the run, with [ErrBoundary]; no agent starts.

// RuntimeError is a runtime the agent cannot run under, with the fix.
type RuntimeError struct {
	Runtime string
	Problem string
	Hint    string
}

func (e *RuntimeError) Error() string {
	return fmt.Sprintf("%v: the agent's runtime %q: %s", ErrBoundary, e.Runtime, e.Problem)
}

// HintText is the fix, for the CLI's hint line.
func (e *RuntimeError) HintText() string { return e.Hint }

// Is makes a RuntimeError an [ErrBoundary]: a run it refuses is refused as unverified.
func (e *RuntimeError) Is(target error) bool { return target == ErrBoundary }

// gvisorBinary is the base name of gVisor's runtime binary.
const gvisorBinary = "runsc"

// gvisorNetwork is the only network mode of gVisor under which the agent's packets cross the
// namespace's kernel rules.
const gvisorNetwork = "host"

// RunscArgs are the runtime arguments abox requires of gVisor's registration: --network=host, so
// that the agent's sockets are the host kernel's in netd's namespace and netd's nftables rules
// see every packet.
//
// Not --oci-seccomp: with it gVisor would filter the agent's calls by Docker's seccomp profile
// too, but the gVisor of Debian 12 (20221219) answers the profile's "clone3: ENOSYS" with EPERM,
// so glibc's pthread_create fails and no threaded program (curl's resolver, Claude Code) runs.
var RunscArgs = []string{"--network=host"}

// DaemonJSON is the daemon.json entry that registers gVisor as runtime name the way abox
// accepts it, with bin as its binary: the hint of every refusal.
func DaemonJSON(name, bin string) string {
	return fmt.Sprintf(`{"runtimes": {%q: {"path": %q, "runtimeArgs": ["%s"]}}}`, name, bin, strings.Join(RunscArgs, `", "`))
}

// runtimeHint names the fix for a runtime registration abox refuses.
func runtimeHint(name, bin string) string {
	if bin == "" || path.Base(bin) != gvisorBinary {
		bin = "/usr/bin/runsc"
	}
	return "register gVisor in /etc/docker/daemon.json as " + DaemonJSON(name, bin) +
		" (keep its other keys), then reload the daemon: kill -HUP $(pidof dockerd); or set run.runtime: runc"
}

// CheckRuntime checks the daemon's registration of the agent's runtime name, given the
// registered runtimes ([docker.Client.Runtimes]). runc, the daemon's own, is always accepted.
func CheckRuntime(name string, registered map[string]docker.Runtime) error {
	if name == render.RuntimeRunc {
		return nil
	}
	rt, ok := registered[name]
	if !ok {
		return &RuntimeError{Runtime: name, Problem: "is not registered with the Docker daemon", Hint: runtimeHint(name, "")}
	}
	refuse := func(format string, args ...any) error {
		return &RuntimeError{Runtime: name, Problem: fmt.Sprintf(format, args...), Hint: runtimeHint(name, rt.Path)}
	}
	if path.Base(rt.Path) != gvisorBinary {
		return &RuntimeError{Runtime: name, Problem: fmt.Sprintf("is %q, not gVisor's runsc", rt.Path), Hint: runtimeHint(name, "")}
	}
	modes, err := networkModes(rt.Args)
	if err != nil {
		return refuse("%v", err)
	}
	if len(modes) == 0 {
		return refuse("is registered without --network=host: gVisor's own network stack would carry the agent's packets past netd's nftables rules")
	}
	if i := slices.IndexFunc(modes, func(m string) bool { return m != gvisorNetwork }); i >= 0 {
		return refuse("is registered with --network=%s: only --network=host keeps the agent's packets in netd's nftables rules", modes[i])
	}
	return nil
}

// networkModes returns the values of every network flag in runsc's arguments, in order, in each
// spelling Go's flag package accepts (-network or --network; =value or a separate value).
func networkModes(args []string) ([]string, error) {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "---") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "network" {
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, errors.New("is registered with a --network flag without a value")
			}
			i++
			value = args[i]
		}
		out = append(out, value)
	}
	return out, nil
}

// runtimeCheckTimeout bounds `docker info`, from when it starts.
const runtimeCheckTimeout = 15 * time.Second

// checkRuntime is the configuration half of the check, before netd starts. It returns the
// agent's runtime.
func (s *Sandbox) checkRuntime(ctx context.Context) (string, error) {
	name, ok := s.Spec.Runtime()
	if !ok {
		return "", fmt.Errorf("%w: the agent's argv names more than one --runtime", ErrBoundary)
	}
	if name == render.RuntimeRunc {
		return name, nil
	}
	ctx, cancel := context.WithTimeout(ctx, runtimeCheckTimeout)
	defer cancel()
	registered, err := s.Docker.Runtimes(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: listing the daemon's runtimes: %v", ErrBoundary, err)
	}
	return name, CheckRuntime(name, registered)
}

// canaryAddr is where the canary connects: TEST-NET-1 (RFC 5737), never a real host, at the
// discard port. netd's ruleset refuses it ("refused tcp") for any uid but netd's.
const canaryAddr = "192.0.2.1/9"

// canaryRefusedRule is the comment of the rule that must count the canary's connection.
const canaryRefusedRule = "refused tcp"

// canaryTimeout bounds the canary container, from when it starts: gVisor starts in about a
// second, and the refusal is immediate.
const canaryTimeout = 30 * time.Second

// canary runs the live half of the check, once netd is ready and before the ruleset is read
// back: a container under the agent's runtime, joined to netd's namespace as the agent's user,
// whose connection to [canaryAddr] must be refused. [canaryCounted] then checks that netd's
// ruleset refused it.
func (s *Sandbox) canary(ctx context.Context, out *Outcome, runtime string) error {
	id, ok := s.Spec.AgentIdentity()
	if !ok {
		return fmt.Errorf("%w: the agent's argv has no numeric --user for the runtime canary", ErrBoundary)
	}
	ctx, cancel := context.WithTimeout(ctx, canaryTimeout)
	defer cancel()
	argv := []string{"run", "--rm", "--pull", "never", "--name", out.Agent + "-canary", "--runtime", runtime,
		"--network", "container:" + out.Netd, "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--user", id.String(), "--read-only", "--entrypoint", "/bin/bash"}
	for _, l := range labelsOf(s.Spec.Agent.Args, out.ID) {
		argv = append(argv, "--label", l)
	}
	argv = append(argv, s.Spec.Agent.Image, "-c", "exec 3<>/dev/tcp/"+canaryAddr)
	res, err := s.Docker.Run(ctx, docker.Invocation{Args: argv})
	stderr := strings.TrimSpace(string(res.Stderr))
	switch {
	case err == nil:
		return fmt.Errorf("%w: runtime %s: the canary's connection to %s, which netd's ruleset refuses, was accepted", ErrBoundary, runtime, strings.ReplaceAll(canaryAddr, "/", ":"))
	case res.ExitCode != 1 || !strings.Contains(stderr, "Connection refused"):
		return &RuntimeError{Runtime: runtime, Problem: fmt.Sprintf("the canary in netd's network namespace did not run as the agent would: %v", err),
			Hint: runtimeHint(runtime, "")}
	}
	return nil
}

// canaryCounted checks, in the ruleset read back after the canary, that netd's rule refused its
// connection.
func canaryCounted(runtime string, listing []byte) error {
	c, err := policy.ParseCounters(listing)
	if err != nil {
		return fmt.Errorf("%w: reading the canary's counter: %v", ErrBoundary, err)
	}
	for _, r := range c.Rules {
		if r.Comment == canaryRefusedRule && r.Packets > 0 {
			return nil
		}
	}
	return &RuntimeError{Runtime: runtime,
		Problem: fmt.Sprintf("the canary's connection was refused, but not by netd's ruleset (its %q rule counted nothing): the runtime's packets do not cross the namespace's nftables rules", canaryRefusedRule),
		Hint:    runtimeHint(runtime, "")}
}

// labelsOf returns the agent argv's --label values, with the run id in place of the run token and
// the role canary, so that the canary is found and swept with its run.
func labelsOf(args []string, runID string) []string {
	var out []string
	a := replaceRun(args, runID)
	for i := 0; i+1 < len(a); i++ {
		if a[i] != "--label" {
			continue
		}
		l := a[i+1]
		if strings.HasPrefix(l, "abox.role=") {
			l = "abox.role=canary"
		}
		out = append(out, l)
		i++
	}
	return out
}
