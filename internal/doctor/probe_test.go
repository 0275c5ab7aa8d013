package doctor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox/sandboxtest"
)

// probeOutput is what the probe script prints in a sandbox where every route holds.
func probeOutput(run string, override map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ABOX-PROBE-RUN\t%s\n", run)
	for _, p := range probeNames {
		line := "held\tfine"
		if o, ok := override[p.name]; ok {
			line = o
		}
		fmt.Fprintf(&b, "ABOX-PROBE\t%s\t%s\n", p.name, line)
	}
	b.WriteString("ABOX-PROBE-END\n")
	return b.String()
}

// blockingWait answers `docker wait` only when the run is over, as the daemon does while netd
// lives; everything else goes to the fake.
type blockingWait struct{ *dockertest.Fake }

func (b blockingWait) Run(ctx context.Context, inv docker.Invocation) (docker.Result, error) {
	if len(inv.Args) > 0 && inv.Args[0] == "wait" {
		<-ctx.Done()
		return docker.Result{ExitCode: -1}, ctx.Err()
	}
	return b.Fake.Run(ctx, inv)
}

// probeFixture answers every docker call of a probe run; the agent prints out(run id).
func probeFixture(t *testing.T, out func(run string) string, readBack []byte) (*fixture, *Env) {
	f := newFixture(t, baseManifest).daemonUp().built().noGateway()
	fk := f.fake
	fk.On("run --detach --rm --name", docker.Result{Stdout: []byte("listener1\n")})
	fk.OnFunc("container inspect --format {{json .}}", func(inv docker.Invocation) (docker.Result, error) {
		if name := inv.Args[len(inv.Args)-1]; strings.HasPrefix(name, "abox-probe-demo-") {
			return jsonResult(map[string]any{"Id": "listener1", "NetworkSettings": map[string]any{
				"Networks": map[string]any{"abox-net": map[string]any{"IPAddress": "172.30.0.9"}}}}), nil
		}
		return jsonResult(map[string]any{"State": map[string]any{"Status": "exited"}}), nil
	})
	fk.On("run --detach --name", docker.Result{Stdout: []byte("netd1\n")})
	fk.On("create --name", docker.Result{Stdout: []byte("agent1\n")})
	fk.On("logs --follow", docker.Result{Stdout: []byte(`{"event":"ready"}` + "\n")})
	fk.OnFunc("exec --user 0", func(docker.Invocation) (docker.Result, error) {
		if readBack != nil && probeRanRuleset(fk) {
			return docker.Result{Stdout: readBack}, nil
		}
		return docker.Result{Stdout: policy.ExpectedRuleset(policy.NetdUID)}, nil
	})
	fk.OnFunc("start --attach", func(inv docker.Invocation) (docker.Result, error) {
		run := strings.TrimPrefix(inv.Args[len(inv.Args)-1], "agent-demo-")
		return docker.Result{Stdout: []byte(out(run))}, nil
	})
	fk.On("", docker.Result{}).Optional() // rm, stop, cp of teardown
	e := f.env()
	e.Docker = docker.NewClient(blockingWait{fk}, nil)
	e.Warden = sandboxtest.Warden(e.Docker)
	return f, e
}

// probeRanRuleset reports whether the agent was started, i.e. the read-back is the second exec.
func probeRanRuleset(fk *dockertest.Fake) bool {
	for _, c := range fk.Calls() {
		if len(c.Args) > 1 && c.Args[0] == "start" {
			return true
		}
	}
	return false
}

func TestProbesAllHeld(t *testing.T) {
	f, e := probeFixture(t, func(run string) string { return probeOutput(run, nil) }, nil)
	e.RunProbes(context.Background())
	for _, r := range Run(context.Background(), e, Probes(), nil) {
		wantStatus(t, r.ID, r.Finding, OK)
	}
	// the agent ran the probe script as the runspec's agent, with targets and no claude
	var agentArgv []string
	for _, c := range f.fake.Calls() {
		if c.Args[0] == "create" {
			agentArgv = c.Args
		}
	}
	joined := strings.Join(agentArgv, " ")
	if !strings.Contains(joined, "--user 1000:1000") || !strings.Contains(joined, "perl -e") || strings.Contains(joined, "--mcp-config") ||
		!strings.Contains(joined, "172.30.0.9 18080 abox-probe-demo-") || !strings.Contains(joined, " 172.30.0.1 ") {
		t.Errorf("agent argv = %s", joined)
	}
	if !strings.Contains(f.fake.ArgvText(), "rm --force --volumes abox-probe-demo-") {
		t.Error("the probe listener was not removed")
	}
}

func TestProbesEscapes(t *testing.T) {
	_, e := probeFixture(t, func(run string) string {
		return probeOutput(run, map[string]string{
			"dns-docker":     "escaped\t127.0.0.11:53 answered abox-probe-demo-x (1 record(s))",
			"gateway-direct": "skipped\tno gateway running",
		})
	}, addAcceptRule(t, policy.ExpectedRuleset(policy.NetdUID)))
	got := map[string]Finding{}
	for _, r := range Run(context.Background(), e, Probes(), nil) {
		got[r.ID] = r.Finding
	}
	wantStatus(t, "probe.dns-docker", got["probe.dns-docker"], Fail)
	wantStatus(t, "probe.gateway-direct", got["probe.gateway-direct"], Skip)
	wantStatus(t, "probe.ip-literal", got["probe.ip-literal"], OK)
	r := got["probe.ruleset"]
	wantStatus(t, "probe.ruleset (changed behind a held attempt)", r, Fail)
	if !strings.Contains(r.Detail, "differs") {
		t.Errorf("probe.ruleset detail %q", r.Detail)
	}
}

func TestProbesWithoutASandbox(t *testing.T) {
	f := newFixture(t, baseManifest).daemonUp().noGateway()
	f.fake.On("image inspect", notFound("image")).Optional()
	for _, r := range Run(context.Background(), f.env(), Probes(), nil) {
		wantStatus(t, r.ID, r.Finding, Fail)
		if !strings.Contains(r.Hint, "abox up") {
			t.Errorf("%s hint %q", r.ID, r.Hint)
		}
	}
}

// TestProbesRunOnlyWhatWasRendered: a runspec that differs from artifacts.json is never run.
func TestProbesRunOnlyWhatWasRendered(t *testing.T) {
	f := newFixture(t, baseManifest).daemonUp()
	f.editRunSpec(func(rs *render.RunSpec) { rs.Netd.Args = append(rs.Netd.Args, "--privileged") })
	r := Run(context.Background(), f.env(), Probes(), nil)[0]
	wantStatus(t, r.ID, r.Finding, Fail)
	if !strings.Contains(r.Detail, "runspec.json (modified)") {
		t.Errorf("detail %q", r.Detail)
	}
}

func TestProbeScriptStoppedEarly(t *testing.T) {
	_, e := probeFixture(t, func(run string) string { return "ABOX-PROBE-RUN\t" + run + "\nABOX-PROBE\truleset\theld\tx\n" }, nil)
	rs := Run(context.Background(), e, Probes(), nil)
	wantStatus(t, "probe.ruleset", rs[6].Finding, OK)
	wantStatus(t, "probe.setuid", rs[7].Finding, Fail)
}

// TestProbeScriptCompiles checks the perl script's syntax when perl is installed.
func TestProbeScriptCompiles(t *testing.T) {
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl is not installed")
	}
	out, err := exec.Command(perl, "-c", "-e", probeScript).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) || !strings.Contains(string(out), "syntax OK") {
		t.Fatalf("perl -c: %v\n%s", err, out)
	}
	if out, err := exec.Command(perl, "-MIO::Socket::INET", "-c", "-e", listenerScript).CombinedOutput(); err != nil {
		t.Fatalf("perl -c listener: %v\n%s", err, out)
	}
}

func TestProbeWriterSplitsLines(t *testing.T) {
	w := &probeWriter{run: &probeRun{results: map[string]probeResult{}}}
	for _, chunk := range []string{"ABOX-PRO", "BE\tipv6\theld\tno v6\nnoise\nABOX-PROBE\tsetuid\tesc", "aped\tuid 0"} {
		w.Write([]byte(chunk))
	}
	w.flush()
	if w.run.results["ipv6"] != (probeResult{"held", "no v6"}) || w.run.results["setuid"] != (probeResult{"escaped", "uid 0"}) {
		t.Errorf("results = %v", w.run.results)
	}
}

// TestProbeScriptKnowsNetdPorts: resolver-bind tries netd's own ports, which probe.pl names
// literally; a port moved in policy must move there too.
func TestProbeScriptKnowsNetdPorts(t *testing.T) {
	for _, p := range []int{policy.DNSPort, policy.SNIPort, policy.HTTPPort, policy.MCPPort} {
		if !strings.Contains(probeScript, strconv.Itoa(p)) {
			t.Errorf("probe.pl does not try netd's port %d", p)
		}
	}
}

func TestProbeNamesToAsk(t *testing.T) {
	p := &policy.Netd{
		Egress:    []string{"api.anthropic.com", "*.example.com", "git.example.com:22", "git.example.com", "a.test", "b.test", "c.test"},
		Mandatory: []string{"api.anthropic.com"},
	}
	if got, want := strings.Join(probeNamesToAsk(p), ","), "git.example.com,a.test,b.test"; got != want {
		t.Errorf("probeNamesToAsk = %q, want %q", got, want)
	}
}
