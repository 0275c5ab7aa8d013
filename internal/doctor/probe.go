package doctor

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
)

//go:embed probe.pl
var probeScript string

// listenerScript answers every TCP connection on listenerPort with a banner: a container on the
// bridge for the agent to try to reach, so that a connection that gets through is seen.
const listenerScript = `alarm 300; my $s = IO::Socket::INET->new(LocalPort => $ARGV[0], Listen => 16, ReuseAddr => 1) or die "$!";` +
	` while (my $c = $s->accept) { print $c "abox-probe-listener\n"; close $c }`

const listenerPort = 18080

// ProbeTimeout bounds the probe sandbox's whole run.
const ProbeTimeout = 3 * time.Minute

// probeNames are the escape routes the probe script tries, with their titles.
var probeNames = []struct{ name, title string }{
	{"dns-unlisted", "unlisted names do not resolve"},
	{"dns-docker", "docker's resolver unreachable"},
	{"ip-literal", "ip literal refused"},
	{"ipv6", "ipv6 refused"},
	{"host-bridge", "host bridge address refused"},
	{"gateway-direct", "gateway unreachable except through netd"},
	{"ruleset", "ruleset unchangeable by the agent"},
	{"setuid", "no privilege from a setuid binary"},
	{"resolver-bind", "resolver and netd addresses not bindable"},
	{"conntrack-plant", "no conntrack state planted for netd's queries"},
	{"dns-spoof", "netd's upstream answers not the agent's"},
}

// Probes are the live escape probes of `abox doctor --probe`, one check per route. They share
// one throwaway sandbox, run by [Env.RunProbes] or on first use.
func Probes() []Check {
	out := make([]Check, len(probeNames))
	for i, p := range probeNames {
		out[i] = Check{ID: "probe." + p.name, Title: p.title, Run: probeCheck(p.name)}
	}
	return out
}

// probeResult is one line of the probe script.
type probeResult struct{ verdict, detail string }

// probeRun is what one probe sandbox showed.
type probeRun struct {
	results  map[string]probeResult
	ruleset  error // the loaded ruleset read back after the agent tried to change it
	readBack bool
	finished bool
}

// RunProbes starts the probe sandbox now, with ctx, so that its minutes do not count against a
// single check's timeout. The probe checks then read its results.
func (e *Env) RunProbes(ctx context.Context) {
	e.probes(ctx)
}

func (e *Env) probes(ctx context.Context) (*probeRun, error) {
	return e.cache.probes.get(func() (*probeRun, error) {
		ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		defer cancel()
		return e.runProbes(ctx)
	})
}

func probeCheck(name string) func(context.Context, *Env) Finding {
	return func(ctx context.Context, e *Env) Finding {
		run, err := e.probes(ctx)
		if err != nil {
			return failf("run `abox up` so that a sandbox can start, then `abox doctor --probe` again", "no probe sandbox: %v", err)
		}
		r, ok := run.results[name]
		switch {
		case !ok && !run.finished:
			return failf("see the run's transcript under the project's runs/, then `abox doctor --probe` again", "the probe script stopped before this probe")
		case !ok:
			return failf("this is a bug in abox; `abox doctor --probe` again", "the probe script reported nothing")
		case r.verdict == "escaped":
			return failf("this route out of the sandbox is open: do not run agents with bypassPermissions; `abox doctor` shows the broken invariant", "escaped: %s", r.detail)
		case r.verdict == "skipped":
			return skipf("", "%s", r.detail)
		case name == "ruleset" && run.ruleset != nil:
			return failf("remove the sandbox with `abox nuke`; netd's ruleset must not change", "%s, but afterwards %v", r.detail, run.ruleset)
		case name == "ruleset" && !run.readBack:
			return warnf("`abox doctor --probe` again; the read-back needs the run's netd", "%s; the ruleset could not be read back afterwards", r.detail)
		case name == "ruleset":
			return okf("held: %s; the loaded ruleset was unchanged afterwards", r.detail)
		}
		return okf("held: %s", r.detail)
	}
}

// runProbes starts a listener on the bridge, then the probe sandbox, and collects its lines.
func (e *Env) runProbes(ctx context.Context) (*probeRun, error) {
	rs, err := e.runSpec()
	if err != nil {
		return nil, fmt.Errorf("nothing rendered: %w", err)
	}
	// Probes run the runspec's argv, as `abox run` does, so only as rendered.
	switch ms, err := artifact.Verify(e.Project); {
	case err != nil:
		return nil, fmt.Errorf("checking the artifacts: %w", err)
	case len(ms) > 0:
		return nil, fmt.Errorf("the artifacts differ from artifacts.json (see artifacts.integrity): %s", artifact.Describe(ms))
	}
	if _, err := e.daemon(ctx); err != nil {
		return nil, fmt.Errorf("the docker daemon does not answer: %w", err)
	}
	for _, img := range []string{rs.Netd.Image, rs.Agent.Image} {
		if _, err := e.image(ctx, img); err != nil {
			return nil, fmt.Errorf("image %s: %w", img, err)
		}
	}
	n, err := e.network(ctx, rs.Network)
	if err != nil {
		return nil, fmt.Errorf("network %s: %w", rs.Network, err)
	}
	args := probeArgs{bridge: bridgeGateway(n)}
	if p, err := e.netdPolicy(); err == nil {
		args.allowed = probeNamesToAsk(p)
	}
	lname := "abox-probe-" + rs.Project + "-" + sandbox.NewRunID()
	defer e.removeQuietly(ctx, lname)
	if args.lip, err = e.startListener(ctx, rs, lname); err != nil {
		return nil, err
	}
	args.lname = lname
	args.gwName, args.gwIP, args.gwPort = e.gatewayTarget(ctx, rs.Network)
	w := &probeWriter{e: e, ctx: ctx, rs: rs, run: &probeRun{results: map[string]probeResult{}}}
	uid, err := e.netdUID()
	if err != nil {
		return nil, err
	}
	sb := &sandbox.Sandbox{Docker: e.Docker, Project: e.Project, Spec: rs, Baseline: policy.ExpectedRuleset(uid), Now: e.clock,
		Progress: e.progress(), Warden: e.Warden}
	so := sandbox.Options{Command: args.argv(), Timeout: ProbeTimeout - 30*time.Second, Output: w, Masks: rs.Masks, MaskWalkLimit: e.maskWalkLimit()}
	if a, err := netip.ParseAddr(args.gwIP); err == nil && args.gwPort > 0 {
		so.Gateway = netip.AddrPortFrom(a, uint16(args.gwPort)) // as a run's netd gets it
	}
	out, err := sb.Run(ctx, so)
	sb.Done(out)
	w.flush()
	if err != nil {
		return nil, fmt.Errorf("the probe sandbox: %w", err)
	}
	return w.run, nil
}

// probeArgs are the targets handed to the probe script.
type probeArgs struct {
	lip, lname, bridge, gwName, gwIP string
	gwPort                           int
	allowed                          []string // names of the project's own allowlist to ask netd for
}

func (a probeArgs) argv() []string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	port := "-"
	if a.gwPort > 0 {
		port = strconv.Itoa(a.gwPort)
	}
	return []string{"perl", "-e", probeScript, dash(a.lip), strconv.Itoa(listenerPort), dash(a.lname), dash(a.bridge),
		dash(a.gwName), dash(a.gwIP), port, dash(strings.Join(a.allowed, ","))}
}

// probeNamesToAsk returns up to three exact names of the project's own allowlist (not the hosts
// abox adds, not wildcards): the spoof probe asks netd for them, as any run of the project would.
func probeNamesToAsk(p *policy.Netd) []string {
	var out []string
	for _, e := range p.Egress {
		name, _, _ := strings.Cut(e, ":")
		if strings.HasPrefix(name, "*.") || slices.Contains(p.Mandatory, e) || slices.Contains(out, name) {
			continue
		}
		if out = append(out, name); len(out) == 3 {
			break
		}
	}
	return out
}

// startListener runs the listener from the agent image, as unprivileged as the agent, on the
// project's network, and returns its address there.
func (e *Env) startListener(ctx context.Context, rs *render.RunSpec, name string) (string, error) {
	argv := []string{"run", "--detach", "--rm", "--name", name, "--pull", "never", "--network", rs.Network,
		"--label", "abox.managed=true", "--label", "abox.role=probe", "--label", "abox.hash=" + e.Project.Hash,
		"--label", "abox.project=" + rs.Project, "--user", parseRunArgs(rs.Agent.Args).user, "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--read-only", "--pids-limit", "32", "--memory", "64m",
		rs.Agent.Image, "perl", "-MIO::Socket::INET", "-e", listenerScript, strconv.Itoa(listenerPort)}
	if _, err := e.Docker.RunDetached(ctx, argv); err != nil {
		return "", fmt.Errorf("starting the probe listener: %w", err)
	}
	c, err := e.Docker.ContainerInspect(ctx, name)
	if err != nil {
		return "", fmt.Errorf("inspecting the probe listener: %w", err)
	}
	ip := c.NetworkSettings.Networks[rs.Network].IPAddress
	if ip == "" {
		return "", errors.New("the probe listener has no address on " + rs.Network)
	}
	return ip, nil
}

// gatewayTarget returns the profile gateway's name, address and port when it runs.
func (e *Env) gatewayTarget(ctx context.Context, network string) (string, string, int) {
	c, name, err := e.gateway(ctx)
	if err != nil || !c.State.Running || e.Config == nil {
		return "", "", 0
	}
	return name, c.NetworkSettings.Networks[network].IPAddress, e.Config.Profiles[e.profile()].Port
}

func bridgeGateway(n *docker.Network) string {
	for _, c := range n.IPAM.Config {
		if c.Gateway != "" && !strings.Contains(c.Gateway, ":") {
			return c.Gateway
		}
	}
	return ""
}

func (e *Env) removeQuietly(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	e.Docker.Remove(ctx, true, true, name)
}

func (e *Env) progress() io.Writer {
	if e.Progress == nil {
		return io.Discard
	}
	return e.Progress
}

func (e *Env) clock() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// probeWriter reads the probe script's output as the sandbox streams it. When the ruleset
// probe reports, the agent has just tried to change netd's ruleset: the writer reads it back
// from netd then, while the sandbox is certainly still up (the sandbox waits for this writer
// before it tears down).
type probeWriter struct {
	e     *Env
	ctx   context.Context
	rs    *render.RunSpec
	mu    sync.Mutex
	buf   bytes.Buffer
	runID string
	run   *probeRun
}

func (w *probeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line) // an incomplete line waits for the rest
			return len(p), nil
		}
		w.line(strings.TrimRight(line, "\r\n"))
	}
}

func (w *probeWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rest := w.buf.String(); rest != "" {
		w.line(rest)
	}
}

func (w *probeWriter) line(l string) {
	f := strings.SplitN(l, "\t", 4)
	switch {
	case f[0] == "ABOX-PROBE-RUN" && len(f) == 2:
		w.runID = f[1]
	case f[0] == "ABOX-PROBE-END":
		w.run.finished = true
	case f[0] == "ABOX-PROBE" && len(f) == 4:
		w.run.results[f[1]] = probeResult{verdict: f[2], detail: f[3]}
		if f[1] == "ruleset" {
			w.readBack()
		}
	}
}

// readBack compares the run's loaded ruleset with the expected one.
func (w *probeWriter) readBack() {
	if w.runID == "" {
		return
	}
	netd := ""
	for i, a := range w.rs.Netd.Args {
		if a == "--name" && i+1 < len(w.rs.Netd.Args) {
			netd = strings.ReplaceAll(w.rs.Netd.Args[i+1], render.RunToken, w.runID)
		}
	}
	w.run.ruleset = w.e.liveRuleset(w.ctx, netd)
	w.run.readBack = true
}
