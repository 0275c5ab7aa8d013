package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// An invariant is one isolation property of a sandbox's two containers, read from the argv in
// runspec.json (what every run executes) and, for an agent.* check, from the project's running
// containers too (what the daemon actually made of it). boundary.* checks read the argv only.
type invariant struct {
	argv func(e *Env, s *sandboxArgs) []string
	live func(c *docker.Container, l *liveSandbox) []string // nil: nothing to see live
	ok   string                                             // detail when it holds
}

// sandboxArgs is a runspec with its argvs parsed: the sandbox's two containers, and the login
// check that mounts the agent's credential volume before a headless run.
type sandboxArgs struct {
	rs                 *render.RunSpec
	agent, netd, login runArgs
}

// liveSandbox is what the live side of an invariant may need about the other containers.
type liveSandbox struct {
	netdByRun map[string]string // abox.run → netd container ID
}

// invariantHint names what fixes a broken invariant: the argv is abox's own artifact, and a
// container started from a tampered one must go.
const invariantHint = "run `abox render` to rewrite runspec.json (`abox doctor` shows whether something else changed it), and `abox nuke` to remove containers started from it"

func (e *Env) sandboxArgs() (*sandboxArgs, error) {
	rs, err := e.runSpec()
	if err != nil {
		return nil, err
	}
	return &sandboxArgs{rs: rs, agent: parseRunArgs(rs.Agent.Args), netd: parseRunArgs(rs.Netd.Args),
		login: parseRunArgs(rs.LoginCheck.Args)}, nil
}

// audit evaluates an invariant on the runspec and, when live is set and the daemon answers, on
// the project's running containers.
func (e *Env) audit(ctx context.Context, inv invariant, live bool) Finding {
	s, err := e.sandboxArgs()
	if err != nil {
		return notRendered(err)
	}
	list := inv.argv(e, s)
	seen := "runspec.json"
	if live && inv.live != nil {
		cs, err := e.sandbox(ctx)
		switch {
		case errors.Is(err, errNoDocker):
			seen += "; no daemon to show running containers"
		case err != nil:
			list = append(list, fmt.Sprintf("could not list running sandboxes: %v", err))
		default:
			l := newLiveSandbox(cs)
			for _, c := range cs {
				for _, p := range inv.live(c, l) {
					list = append(list, fmt.Sprintf("running %s %s: %s", role(c), containerName(c), p))
				}
			}
			seen += fmt.Sprintf(" and %d running container(s)", len(cs))
		}
	}
	return problems(list, invariantHint, inv.ok+" ("+seen+")")
}

func newLiveSandbox(cs []*docker.Container) *liveSandbox {
	l := &liveSandbox{netdByRun: map[string]string{}}
	for _, c := range cs {
		if role(c) == roleNetd {
			l.netdByRun[c.Config.Labels["abox.run"]] = c.ID
		}
	}
	return l
}

// both applies a per-container argv test to the agent and netd, and to the login check, which
// mounts the agent's credential volume, prefixing each problem.
func both(s *sandboxArgs, f func(r runArgs) []string) []string {
	var out []string
	for _, side := range []struct {
		name string
		r    runArgs
	}{{"agent", s.agent}, {"netd", s.netd}, {"login check", s.login}} {
		for _, p := range f(side.r) {
			out = append(out, side.name+" "+p)
		}
	}
	return out
}

var invNoDockerSock = invariant{
	ok: "no docker socket in the agent's or netd's mounts",
	argv: func(_ *Env, s *sandboxArgs) []string {
		return both(s, func(r runArgs) []string {
			var out []string
			for _, m := range r.mounts {
				if dockerSocket(m.typ, m.source, m.target) {
					out = append(out, "mounts "+m.raw)
				}
			}
			for _, v := range r.volumesFrom {
				out = append(out, "takes the mounts of "+v+" (--volumes-from)")
			}
			return out
		})
	},
	live: func(c *docker.Container, _ *liveSandbox) []string {
		var out []string
		for _, m := range c.Mounts {
			if dockerSocket(m.Type, m.Source, m.Destination) {
				out = append(out, "mounts "+m.Source+" at "+m.Destination)
			}
		}
		return out
	},
}

var invNoPublishedPorts = invariant{
	ok: "nothing published, no host network",
	argv: func(_ *Env, s *sandboxArgs) []string {
		return both(s, func(r runArgs) []string {
			var out []string
			for _, p := range r.publish {
				out = append(out, "publishes "+p)
			}
			if r.network == "host" {
				out = append(out, "shares the host's network")
			}
			return out
		})
	},
	live: func(c *docker.Container, _ *liveSandbox) []string {
		out := publishedPorts(c)
		for i := range out {
			out[i] = "publishes " + out[i]
		}
		if c.HostConfig.NetworkMode == "host" {
			out = append(out, "shares the host's network")
		}
		return out
	},
}

var invNotPrivileged = invariant{
	ok: "not privileged, no host namespace, no device, no unconfined profile",
	argv: func(_ *Env, s *sandboxArgs) []string {
		return both(s, func(r runArgs) []string {
			var out []string
			if r.privileged {
				out = append(out, "runs --privileged")
			}
			for _, n := range r.hostNamespaces {
				out = append(out, "shares a host namespace: "+n)
			}
			for _, d := range r.devices {
				out = append(out, "gets device "+d)
			}
			for _, o := range unconfined(r.securityOpt) {
				out = append(out, "runs with --security-opt "+o)
			}
			return out
		})
	},
	live: func(c *docker.Container, _ *liveSandbox) []string {
		var out []string
		if c.HostConfig.Privileged {
			out = append(out, "is privileged")
		}
		for _, o := range unconfined(c.HostConfig.SecurityOpt) {
			out = append(out, "runs with security option "+o)
		}
		return out
	},
}

var invAgentCaps = invariant{
	ok: "the agent drops ALL capabilities and adds none",
	argv: func(_ *Env, s *sandboxArgs) []string {
		return capProblems(s.agent.capDrop, s.agent.capAdd, nil)
	},
	live: func(c *docker.Container, _ *liveSandbox) []string {
		if role(c) != roleAgent {
			return nil
		}
		return capProblems(c.HostConfig.CapDrop, c.HostConfig.CapAdd, nil)
	},
}

var invNetdCaps = invariant{
	ok: "netd drops ALL and adds only " + strings.Join(render.NetdCaps, ", "),
	argv: func(_ *Env, s *sandboxArgs) []string {
		out := capProblems(s.netd.capDrop, s.netd.capAdd, render.NetdCaps)
		if !hasNoNewPrivileges(s.netd.securityOpt) {
			out = append(out, "no --security-opt no-new-privileges")
		}
		return out
	},
	live: func(c *docker.Container, _ *liveSandbox) []string {
		if role(c) != roleNetd {
			return nil
		}
		return capProblems(c.HostConfig.CapDrop, c.HostConfig.CapAdd, render.NetdCaps)
	},
}

// invLoginCheck: the login check, which abox runs before a headless run with the agent's
// credential volume mounted, gets less than the agent: no network at all, no capability, no
// new privileges, a read-only root, the agent's uid and image, and only that volume, read-only.
// It is --rm and lasts a moment, so there is nothing to see live.
var invLoginCheck = invariant{
	ok: "the login check has no network, no capability, the agent's uid and only the ~/.claude volume, read-only",
	argv: func(_ *Env, s *sandboxArgs) []string {
		l, rs := s.login, s.rs
		if len(rs.LoginCheck.Args) == 0 {
			return []string{"runspec.json has no login check"}
		}
		out := capProblems(l.capDrop, l.capAdd, nil)
		if !hasNoNewPrivileges(l.securityOpt) {
			out = append(out, "no --security-opt no-new-privileges")
		}
		if l.network != "none" {
			out = append(out, fmt.Sprintf("--network is %q, not none", l.network))
		}
		if rootUser(l.user) || l.user != s.agent.user {
			out = append(out, fmt.Sprintf("runs as %q, not the agent's %q", l.user, s.agent.user))
		}
		if !slices.Contains(rs.LoginCheck.Args, "--read-only") {
			out = append(out, "no --read-only")
		}
		for _, m := range l.mounts {
			if m.typ != "volume" || m.source != rs.ClaudeVol || m.target != "/claude" || !m.readOnly {
				out = append(out, "mounts "+m.raw+" (only "+rs.ClaudeVol+" at /claude, read-only)")
			}
		}
		for _, e := range l.env {
			out = append(out, "sets env "+strings.SplitN(e, "=", 2)[0])
		}
		if rs.LoginCheck.Image != rs.Agent.Image {
			out = append(out, fmt.Sprintf("image %q, not the agent's %q", rs.LoginCheck.Image, rs.Agent.Image))
		}
		return out
	},
}

// capProblems checks that drop holds ALL and add only allowed capabilities (the daemon reads
// them back as CAP_X).
func capProblems(drop, add, allowed []string) []string {
	var out []string
	if !slices.ContainsFunc(drop, func(c string) bool { return strings.EqualFold(c, "ALL") }) {
		out = append(out, "no --cap-drop ALL")
	}
	for _, c := range add {
		name := strings.TrimPrefix(strings.ToUpper(c), "CAP_")
		if !slices.Contains(allowed, name) {
			out = append(out, "adds capability "+c)
		}
	}
	return out
}

var invNoNewPrivileges = invariant{
	ok: "the agent runs with no-new-privileges: a setuid binary cannot raise it",
	argv: func(_ *Env, s *sandboxArgs) []string {
		if !hasNoNewPrivileges(s.agent.securityOpt) {
			return []string{"no --security-opt no-new-privileges"}
		}
		return nil
	},
	live: func(c *docker.Container, _ *liveSandbox) []string {
		if role(c) == roleAgent && !hasNoNewPrivileges(c.HostConfig.SecurityOpt) {
			return []string{"no no-new-privileges"}
		}
		return nil
	},
}

var invAgentUser = invariant{
	ok: "the agent runs as a non-root user",
	argv: func(_ *Env, s *sandboxArgs) []string {
		if rootUser(s.agent.user) {
			return []string{fmt.Sprintf("runs as %q (root, or the image's user)", s.agent.user)}
		}
		return nil
	},
	live: func(c *docker.Container, _ *liveSandbox) []string {
		if role(c) == roleAgent && rootUser(c.Config.User) {
			return []string{fmt.Sprintf("runs as %q (root, or the image's user)", c.Config.User)}
		}
		return nil
	},
}

var invAgentNetwork = invariant{
	ok: "the agent joins netd's network namespace; netd is on the abox network",
	argv: func(_ *Env, s *sandboxArgs) []string {
		var out []string
		if want := "container:" + s.netd.name; s.agent.network != want || s.netd.name == "" {
			out = append(out, fmt.Sprintf("agent --network is %q, not %q", s.agent.network, want))
		}
		if s.netd.network != s.rs.Network {
			out = append(out, fmt.Sprintf("netd --network is %q, not %q", s.netd.network, s.rs.Network))
		}
		return append(out, runtimeProblems(s.agent.runtimes, s.netd.runtimes)...)
	},
	live: func(c *docker.Container, l *liveSandbox) []string {
		if role(c) == roleNetd && c.HostConfig.Runtime != "" && c.HostConfig.Runtime != manifest.RuntimeRunc {
			return []string{fmt.Sprintf("runs under %q, not runc (netd's nftables must be the host kernel's)", c.HostConfig.Runtime)}
		}
		if role(c) != roleAgent {
			return nil
		}
		netd := l.netdByRun[c.Config.Labels["abox.run"]]
		if mode := c.HostConfig.NetworkMode; netd == "" || mode != "container:"+netd {
			return []string{fmt.Sprintf("network mode %q is not its run's netd", mode)}
		}
		return nil
	},
}

// runtimeProblems: netd runs under runc, the daemon's default, since its ruleset must be the
// host kernel's; the agent under runc or runsc, once.
func runtimeProblems(agent, netd []string) []string {
	var out []string
	if len(agent) > 1 {
		out = append(out, fmt.Sprintf("agent --runtime is given %d times", len(agent)))
	}
	for _, rt := range agent {
		if !slices.Contains(manifest.Runtimes, rt) {
			out = append(out, fmt.Sprintf("agent --runtime is %q, not one of %s", rt, strings.Join(manifest.Runtimes, ", ")))
		}
	}
	for _, rt := range netd {
		if rt != manifest.RuntimeRunc {
			out = append(out, fmt.Sprintf("netd --runtime is %q, not runc (its nftables must be the host kernel's)", rt))
		}
	}
	return out
}

// invNetdPorts: the namespace netd owns, which the agent joins, keeps the ports below 1024
// privileged, so the agent cannot bind 127.0.0.11:53 (or port 53 anywhere) and answer netd's
// own upstream queries. Docker's default in a container is every port unprivileged.
var invNetdPorts = invariant{
	ok: fmt.Sprintf("netd's namespace keeps ports below %d privileged (%s)", policy.UnprivilegedPortStart, policy.UnprivilegedPortSysctl),
	argv: func(_ *Env, s *sandboxArgs) []string {
		return portSysctlProblems(s.netd.sysctls)
	},
	live: func(c *docker.Container, _ *liveSandbox) []string {
		if role(c) != roleNetd {
			return nil
		}
		return portSysctlProblems(c.HostConfig.Sysctls)
	},
}

func portSysctlProblems(sysctls map[string]string) []string {
	want := strconv.Itoa(policy.UnprivilegedPortStart)
	if v, ok := sysctls[policy.UnprivilegedPortSysctl]; !ok || v != want {
		return []string{fmt.Sprintf("netd has no --sysctl %s=%s (the agent could bind any port)", policy.UnprivilegedPortSysctl, want)}
	}
	return nil
}
