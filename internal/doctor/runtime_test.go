package doctor

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/sandbox"
)

// TestAgentRuntime: doctor reports the agent's runtime and whether the daemon's registration of
// it is one a run accepts, with the daemon.json entry as the hint when it is not. runc needs no
// daemon call.
func TestAgentRuntime(t *testing.T) {
	const runsc = baseManifest + "run: {runtime: runsc}\n"
	for _, tc := range []struct {
		name, manifest, info string
		want                 Status
		detail               string
		verified             bool
	}{
		{"runc", baseManifest, "", OK, "runc: the agent's system calls reach this machine's kernel", true},
		{"runsc registered", runsc, `{"runc":{"path":"runc"},"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--network=host"]}}`,
			OK, "runsc: gVisor, registered with --network=host", true},
		{"runsc on its own network stack", runsc, `{"runc":{"path":"runc"},"runsc":{"path":"/usr/bin/runsc"}}`,
			Fail, "runsc is registered without --network=host", false},
		{"runsc not registered", runsc, `{"runc":{"path":"runc"}}`, Fail, "runsc is not registered with the Docker daemon", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.manifest).healthy()
			if tc.info != "" {
				f.fake.On("info --format {{json .Runtimes}}", docker.Result{Stdout: []byte(tc.info)})
			}
			got := f.run(agentRuntime)
			wantStatus(t, "agent.runtime", got, tc.want)
			if !strings.Contains(got.Detail, tc.detail) {
				t.Errorf("detail %q does not say %q", got.Detail, tc.detail)
			}
			if got.Data["verified"] != tc.verified {
				t.Errorf("data verified = %v, want %v", got.Data["verified"], tc.verified)
			}
			if tc.want == Fail && !strings.Contains(got.Hint, sandbox.DaemonJSON("runsc", "/usr/bin/runsc")) {
				t.Errorf("hint %q lacks the daemon.json entry", got.Hint)
			}
		})
	}
	f := newFixture(t, runsc).daemonDown()
	wantStatus(t, "agent.runtime without a daemon", f.run(agentRuntime), Skip)
}
