//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/telemetry"
)

// The agent under gVisor (run.runtime: runsc). setup.sh registers gVisor with the daemon as
// runsc (--network=host --oci-seccomp), which abox accepts, and as runsc-netstack (gVisor's own
// network stack), which it must refuse. The attack tests run under runsc as a whole with
// ABOX_E2E_RUNTIME=runsc (.ci/run does, for the network and execution attacks).

// runscManifest is the manifest key that puts the agent under gVisor.
const runscManifest = "run:\n  runtime: runsc\n"

// TestRuntimeRunscHoldsTheBoundary: with run.runtime: runsc the agent runs under gVisor (it sees
// gVisor's kernel, not this machine's) while netd stays on runc, the run's verification includes
// the runtime canary, whose refused connection netd's ruleset counted, and egress is still
// netd's: the allowed name gets through, an unlisted name and an IP literal do not.
func TestRuntimeRunscHoldsTheBoundary(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("allowed.test")
	other := h.StartServer("other.test")
	upProject(t, h, "gvisor", []string{"allowed.test"}, runscManifest)
	out, got := runscRun(t, h,
		`echo "allowed $(claude net tls allowed.test:443 allowed.test)"`,
		`echo "unlisted $(claude net dns 127.0.0.1:53 other.test)"`,
		`echo "ip-literal-tls $(claude net tls `+other.IP+`:443 -)"`,
		`echo "ip-tcp-2222 $(claude net tcp `+other.IP+`:2222 hi)"`,
		`echo "docker-dns $(claude net dns 127.0.0.11:53 other.test)"`,
	)
	wantGVisorKernel(t, out)
	probesOK(t, got, "allowed")
	probesRefused(t, got, "unlisted", "ip-literal-tls", "ip-tcp-2222", "docker-dns")
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test was reached from under gVisor: %v", ev)
	}
	run := runRecords(t, h)[0]
	dir := run["run_dir"].(string)
	var argv [][]string
	readJSON(t, filepath.Join(dir, "argv.json"), &argv)
	if len(argv) != 2 {
		t.Fatalf("argv.json holds %d argvs, want netd's and the agent's", len(argv))
	}
	if slices.Contains(argv[0], "--runtime") {
		t.Errorf("netd's argv names a runtime: %q", argv[0])
	}
	if !hasPair(argv[1], "--runtime", "runsc") {
		t.Errorf("the agent's argv lacks --runtime runsc: %q", argv[1])
	}
	var phases []sandbox.Phase
	readJSON(t, filepath.Join(dir, "phases.json"), &phases)
	if !slices.ContainsFunc(phases, func(p sandbox.Phase) bool { return p.Name == "runtime canary" }) {
		t.Errorf("no runtime canary among the run's phases: %v", phases)
	}
	hv, err := telemetry.ReadHarvest(filepath.Join(dir, "netd"))
	if err != nil || hv.Counters == nil {
		t.Fatalf("netd's harvest: %v", err)
	}
	refused := int64(0)
	for _, r := range hv.Counters.Rules {
		if r.Comment == "refused tcp" {
			refused = r.Packets
		}
	}
	if refused < 2 { // the canary's and the agent's ip-tcp-2222
		t.Errorf("netd's \"refused tcp\" counted %d packets, want the canary's and the agent's", refused)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	res := h.Abox("doctor", "--json")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res)
	}
	found := false
	for _, c := range rep.Checks {
		if c.ID == "agent.runtime" {
			found = true
			if c.Status != doctor.OK || c.Data["runtime"] != "runsc" || c.Data["verified"] != true {
				t.Errorf("doctor agent.runtime = %s (%s) %v, want ok, runsc, verified", c.Status, c.Detail, c.Data)
			}
		}
	}
	if !found {
		t.Error("doctor reports no agent.runtime")
	}
}

// runscRun is attackRun for a project under runsc whatever $ABOX_E2E_RUNTIME says: it adds the
// kernel probe itself.
func runscRun(t *testing.T, h *harness.H, script ...string) (string, map[string]probeResult) {
	t.Helper()
	res := h.Abox("run", strings.Join(append([]string{kernelProbe}, script...), "\n"))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	out := agentOutput(res.Stdout)
	return out, probes(t, out)
}

func hasPair(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

// TestRuntimeNetstackRefused: gVisor registered without --network=host (setup.sh's
// runsc-netstack, gVisor's own network stack) is refused before anything starts, by the
// sandbox's runtime check against the real daemon's registration: a boundary error naming the
// missing argument, the daemon.json entry as its hint, the run refused, and no container made.
// The runspec is the project's own, rendered for runsc, with the runtime renamed: abox run
// itself refuses a runspec that differs from a fresh render, so the sandbox is driven directly.
func TestRuntimeNetstackRefused(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "netstack", nil, runscManifest)
	var rs render.RunSpec
	readJSON(t, filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts", render.RunSpecFile), &rs)
	i := slices.Index(rs.Agent.Args, "--runtime")
	if i < 0 || rs.Agent.Args[i+1] != "runsc" {
		t.Fatalf("the rendered agent argv has no --runtime runsc: %q", rs.Agent.Args)
	}
	rs.Agent.Args[i+1] = "runsc-netstack"
	sb := &sandbox.Sandbox{
		Docker: docker.NewClient(&docker.ExecRunner{}, nil), Project: paths.Project{Workspace: h.Workspace, Dir: t.TempDir()},
		Spec: &rs, Baseline: policy.ExpectedRuleset(policy.NetdUID), Now: time.Now,
	}
	out, err := sb.Run(context.Background(), sandbox.Options{Prompt: "touch reached"})
	var re *sandbox.RuntimeError
	if !errors.As(err, &re) || !errors.Is(err, sandbox.ErrBoundary) {
		t.Fatalf("Run under runsc-netstack = %v, want a runtime refusal", err)
	}
	if want := `the agent's runtime "runsc-netstack": is registered without --network=host`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if want := sandbox.DaemonJSON("runsc-netstack", "/usr/bin/runsc"); !strings.Contains(re.HintText(), want) {
		t.Errorf("hint %q lacks the daemon.json entry %s", re.HintText(), want)
	}
	if out.Result != "refused" {
		t.Errorf("Result %q, want refused", out.Result)
	}
	for _, p := range out.Phases {
		if p.Name == "netd start" || p.Name == "agent create" {
			t.Errorf("phase %q ran: the refusal came after something started (%v)", p.Name, out.Phases)
		}
	}
	if fileExists(h.Workspace, "reached") {
		t.Error("the agent ran under a runtime that was refused")
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers made: %v", left)
	}
}
