package doctor

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/render"
)

// TestLoginCheckTamperBreaksItsInvariant widens the login check's argv in runspec.json one way
// at a time: its agent.login-check check and boundary.login-check (or, for what every container
// must avoid, the shared boundary check) fail, as does the artifacts' integrity.
func TestLoginCheckTamperBreaksItsInvariant(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(rs *render.RunSpec)
		boundary string
		want     string
	}{
		{"capability added", loginArgs(appendArgs("--cap-add", "DAC_OVERRIDE")), "boundary.login-check", "adds capability DAC_OVERRIDE"},
		{"no cap-drop", loginArgs(removeArgs("--cap-drop", "ALL")), "boundary.login-check", "no --cap-drop ALL"},
		{"volume writable", func(rs *render.RunSpec) {
			rs.LoginCheck.Args = replaceValue(rs.LoginCheck.Args, ",target=/claude,readonly", ",target=/claude")
		}, "boundary.login-check", "read-only"},
		{"a bind mount", loginArgs(appendArgs("--mount", "type=bind,source=/home,target=/h,readonly")), "boundary.login-check", "mounts type=bind"},
		{"a network", loginArgs(replaceNetwork("abox-net")), "boundary.login-check", `--network is "abox-net"`},
		{"root", loginArgs(appendArgs("--user", "0:0")), "boundary.login-check", `runs as "0:0"`},
		{"no no-new-privileges", loginArgs(removeArgs("--security-opt", "no-new-privileges")), "boundary.login-check", "no-new-privileges"},
		{"writable root", loginArgs(func(a []string) []string {
			for i, v := range a {
				if v == "--read-only" {
					return append(a[:i:i], a[i+1:]...)
				}
			}
			return a
		}), "boundary.login-check", "no --read-only"},
		{"an env var", loginArgs(appendArgs("--env", "ANTHROPIC_API_KEY=x")), "boundary.login-check", "sets env ANTHROPIC_API_KEY"},
		{"another image", func(rs *render.RunSpec) { rs.LoginCheck.Image = "alpine" }, "boundary.login-check", `image "alpine"`},
		{"gone", func(rs *render.RunSpec) { rs.LoginCheck = render.RunCommand{} }, "boundary.login-check", "no login check"},
		{"privileged", loginArgs(appendArgs("--privileged")), "boundary.not-privileged", "login check runs --privileged"},
		{"docker socket", loginArgs(appendArgs("-v", "/var/run/docker.sock:/var/run/docker.sock")), "boundary.no-docker-sock", "login check mounts"},
		{"published port", loginArgs(appendArgs("-p", "8080:8080")), "boundary.no-published-ports", "login check publishes 8080:8080"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest).healthy()
			f.editRunSpec(func(rs *render.RunSpec) {
				if len(rs.LoginCheck.Args) == 0 {
					t.Fatal("the fixture's runspec has no login check")
				}
				tc.edit(rs)
			})
			b := boundaryResult(t, f, tc.boundary)
			wantStatus(t, tc.boundary, b.Finding, Fail)
			if !strings.Contains(b.Detail, tc.want) {
				t.Errorf("%s detail %q does not mention %q", tc.boundary, b.Detail, tc.want)
			}
			if tc.boundary == "boundary.login-check" {
				wantStatus(t, "agent.login-check", f.run(agentLoginCheck), Fail)
			}
			wantStatus(t, "artifacts.integrity", f.run(artifactsIntegrity), Fail)
		})
	}
}

func loginArgs(edit func([]string) []string) func(*render.RunSpec) {
	return func(rs *render.RunSpec) { rs.LoginCheck.Args = edit(rs.LoginCheck.Args) }
}
