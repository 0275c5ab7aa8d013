package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

// TestCheckRuntime: the daemon's registration of the agent's runtime is accepted only when it is
// gVisor's runsc passing --network=host, in any spelling runsc's flags take, and no other
// network mode; every refusal is a boundary error whose hint is the daemon.json entry.
func TestCheckRuntime(t *testing.T) {
	good := docker.Runtime{Path: "/usr/bin/runsc", Args: []string{"--network=host"}}
	for _, tc := range []struct {
		name     string
		runtime  string
		reg      map[string]docker.Runtime
		want     string // in the error; empty: accepted
		wantPath string // the path the hint names
	}{
		{name: "runc needs no registration", runtime: "runc"},
		{name: "good", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": good}},
		{name: "found on the daemon's PATH", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "runsc", Args: []string{"--debug", "--network=host"}}}},
		{name: "two-argument flag", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/opt/gvisor/runsc", Args: []string{"--debug", "-network", "host"}}}},
		{name: "single dash", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: []string{"-network=host", "--platform=ptrace"}}}},
		{name: "network named like another flag", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: []string{"--network-host"}}},
			want: "is registered without --network=host", wantPath: "/usr/bin/runsc"},
		{name: "none", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: []string{"-network=none"}}},
			want: "is registered with --network=none", wantPath: "/usr/bin/runsc"},
		{name: "missing", runtime: "runsc", reg: map[string]docker.Runtime{"runc": {Path: "runc"}},
			want: `the agent's runtime "runsc": is not registered with the Docker daemon`, wantPath: "/usr/bin/runsc"},
		{name: "not gVisor", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/bin/runc", Args: []string{"--network=host"}}},
			want: `is "/usr/bin/runc", not gVisor's runsc`, wantPath: "/usr/bin/runsc"},
		{name: "a look-alike name", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/bin/runsc-wrapper", Args: []string{"--network=host"}}},
			want: `not gVisor's runsc`, wantPath: "/usr/bin/runsc"},
		{name: "no network argument", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/local/bin/runsc"}},
			want: "is registered without --network=host", wantPath: "/usr/local/bin/runsc"},
		{name: "netstack", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: []string{"--network=sandbox"}}},
			want: "is registered with --network=sandbox", wantPath: "/usr/bin/runsc"},
		{name: "host overridden later", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: []string{"--network=host", "--network", "sandbox"}}},
			want: "is registered with --network=sandbox", wantPath: "/usr/bin/runsc"},
		{name: "flag without a value", runtime: "runsc", reg: map[string]docker.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: []string{"--network"}}},
			want: "a --network flag without a value", wantPath: "/usr/bin/runsc"},
		{name: "another registration name", runtime: "runsc-netstack", reg: map[string]docker.Runtime{"runsc": good, "runsc-netstack": {Path: "/usr/bin/runsc"}},
			want: `the agent's runtime "runsc-netstack": is registered without --network=host`, wantPath: "/usr/bin/runsc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRuntime(tc.runtime, tc.reg)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckRuntime = %v, want nil", err)
				}
				return
			}
			var re *RuntimeError
			if !errors.As(err, &re) || !errors.Is(err, ErrBoundary) {
				t.Fatalf("CheckRuntime = %v, want a RuntimeError that is ErrBoundary", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if snippet := DaemonJSON(tc.runtime, tc.wantPath); !strings.Contains(re.HintText(), snippet) {
				t.Errorf("hint %q lacks the daemon.json entry %s", re.HintText(), snippet)
			}
		})
	}
}

// runtimeSandbox is verifySandbox's sandbox with the agent under runsc: the daemon's runtimes
// answer info, the canary canaryRes, and the read-back live.
func runtimeSandbox(t *testing.T, info string, canaryRes *docker.Result, live []byte) (*Sandbox, *dockertest.Fake) {
	t.Helper()
	fake := dockertest.New(t)
	fake.On("info --format {{json .Runtimes}}", docker.Result{Stdout: []byte(info)})
	if canaryRes != nil {
		fake.On("run --rm", *canaryRes)
	}
	fake.On("run", docker.Result{Stdout: []byte("netd-id\n")}).Optional()
	fake.On("create", docker.Result{Stdout: []byte("agent-id\n")}).Optional()
	fake.On("logs", docker.Result{Stdout: []byte(netdOutput)}).Optional()
	fake.On("exec", docker.Result{Stdout: live}).Optional()
	fake.On("start", docker.Result{}).Optional()
	fake.OnFunc("wait", func(docker.Invocation) (docker.Result, error) {
		time.Sleep(5 * time.Second)
		return docker.Result{}, nil
	}).Optional()
	fake.On("container inspect", docker.Result{Stdout: []byte(`{"State":{"Running":false,"ExitCode":0}}`)}).Optional()
	fake.On("stop", docker.Result{}).Optional()
	fake.On("kill --signal USR1", docker.Result{}).Optional()
	fake.On("rm", docker.Result{}).Optional()
	fake.On("cp", docker.Result{}).Optional()
	s := newVerifySandbox(t, fake)
	s.Spec.Agent.Args = append(s.Spec.Agent.Args, "--runtime", "runsc", "--user", "1000:1000", "--label", "abox.role=agent", "--label", "abox.run="+"@RUN@")
	return s, fake
}

const (
	infoGood     = `{"runc":{"path":"runc"},"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--network=host"]}}`
	infoNetstack = `{"runc":{"path":"runc"},"runsc":{"path":"/usr/bin/runsc"}}`
	infoNone     = `{"runc":{"path":"runc"}}`
)

var canaryRefused = docker.Result{ExitCode: 1, Stderr: []byte("bash: connect: Connection refused\nbash: line 1: /dev/tcp/192.0.2.1/9: Connection refused\n")}

// counted is the live listing with netd's "refused tcp" rule having counted packets.
func counted(t *testing.T, packets int) []byte {
	t.Helper()
	live, err := os.ReadFile(filepath.Join("..", "policy", "testdata", "live-docker.json"))
	if err != nil {
		t.Fatal(err)
	}
	o := decodeListing(t, live)
	for _, e := range asSlice(o[o.rule(t, "output", canaryRefusedRule)]["rule"]["expr"]) {
		if c, ok := e.(map[string]any)["counter"].(map[string]any); ok {
			c["packets"], c["bytes"] = packets, 60*packets
		}
	}
	return o.encode(t)
}

// TestRunRefusesAnUnverifiedRuntime: a runtime registration abox does not accept refuses the run
// before anything starts: no netd, no agent container, no canary.
func TestRunRefusesAnUnverifiedRuntime(t *testing.T) {
	for name, info := range map[string]string{"without --network=host": infoNetstack, "not registered": infoNone} {
		t.Run(name, func(t *testing.T) {
			s, fake := runtimeSandbox(t, info, nil, nil)
			out, err := s.Run(context.Background(), Options{Prompt: "hi"})
			var re *RuntimeError
			if !errors.Is(err, ErrBoundary) || !errors.As(err, &re) {
				t.Fatalf("Run = %v, want a RuntimeError", err)
			}
			if out.Result != "refused" {
				t.Errorf("Result = %q, want refused", out.Result)
			}
			for _, c := range fake.Calls() {
				if c.Args[0] != "info" {
					t.Errorf("docker %s was called for a runtime that did not verify: nothing was started, so nothing is torn down", strings.Join(c.Args, " "))
				}
			}
			if len(out.Phases) != 1 || out.Phases[0].Name != "prepare" {
				t.Errorf("phases %v, want prepare only", out.Phases)
			}
		})
	}
}

// TestRunRuntimeCanary: with the registration accepted, the agent starts only when the canary,
// under the agent's runtime in netd's namespace, is refused and netd's rule counted the refusal.
func TestRunRuntimeCanary(t *testing.T) {
	for _, tc := range []struct {
		name   string
		canary docker.Result
		live   []byte
		want   string // in the error; empty: the agent starts
	}{
		{name: "refused by netd", canary: canaryRefused, live: counted(t, 1)},
		{name: "accepted", canary: docker.Result{}, live: counted(t, 1), want: "was accepted"},
		{name: "refused elsewhere", canary: canaryRefused, live: counted(t, 0), want: `its "refused tcp" rule counted nothing`},
		{name: "cannot join netd", canary: docker.Result{ExitCode: 125, Stderr: []byte("docker: Error response from daemon: OCI runtime start failed: cannot run with network enabled in root network namespace: unknown\n")},
			live: counted(t, 1), want: "the canary in netd's network namespace did not run as the agent would"},
		{name: "times out", canary: docker.Result{ExitCode: 1, Stderr: []byte("bash: connect: Connection timed out\n")}, live: counted(t, 1), want: "did not run as the agent would"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fake := runtimeSandbox(t, infoGood, &tc.canary, tc.live)
			out, err := s.Run(context.Background(), Options{Prompt: "hi"})
			if tc.want == "" {
				if err != nil || !agentStarted(fake) {
					t.Fatalf("Run = %v, agent started %v; want it started (notes %v)", err, agentStarted(fake), out.Notes)
				}
				checkCanaryArgv(t, fake, out)
				return
			}
			if !errors.Is(err, ErrBoundary) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want a boundary error saying %q", err, tc.want)
			}
			if agentStarted(fake) {
				t.Error("the agent was started after a canary that did not hold")
			}
		})
	}
}

// checkCanaryArgv: the canary runs under the agent's runtime, in netd's namespace, as the agent's
// user with nothing more, and is labelled as its run's.
func checkCanaryArgv(t *testing.T, fake *dockertest.Fake, out *Outcome) {
	t.Helper()
	for _, c := range fake.Calls() {
		if len(c.Args) < 2 || c.Args[1] != "--rm" {
			continue
		}
		a := strings.Join(c.Args, " ")
		for _, want := range []string{"--runtime runsc", "--network container:" + out.Netd, "--cap-drop ALL",
			"--security-opt no-new-privileges", "--user 1000:1000", "--label abox.role=canary", "--label abox.run=" + out.ID, "abox-agent-p:1 -c exec 3<>/dev/tcp/192.0.2.1/9"} {
			if !strings.Contains(a, want) {
				t.Errorf("canary argv %q lacks %q", a, want)
			}
		}
		return
	}
	t.Error("no canary was run")
}
