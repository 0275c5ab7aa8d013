package doctor

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/render"
	"github.com/google/go-cmp/cmp"
)

type ctxT = context.Context

func TestParseRunArgs(t *testing.T) {
	args := []string{"create", "--name", "a", "-dit", "--network=container:n", "-u", "1000", "--cap-drop", "ALL",
		"--cap-add=NET_RAW", "--security-opt", "no-new-privileges", "-p8080:80", "--publish", "9:9", "-P",
		"--mount", `type=bind,"source=/x,y",target=/t,readonly`, "-v", "/var/run:/r:ro", "-v", "named:/n",
		"--privileged=false", "--pid", "host", "--device=/dev/kvm", "--volumes-from", "other", "-e", "A=1",
		"image:tag", "--privileged"}
	got := parseRunArgs(args)
	want := runArgs{
		name: "a", network: "container:n", user: "1000", capAdd: []string{"NET_RAW"}, capDrop: []string{"ALL"},
		securityOpt: []string{"no-new-privileges"}, publish: []string{"8080:80", "9:9", "-P"},
		mounts: []mountArg{
			{typ: "bind", source: "/x,y", target: "/t", readOnly: true, raw: `type=bind,"source=/x,y",target=/t,readonly`},
			{typ: "bind", source: "/var/run", target: "/r", readOnly: true, raw: "/var/run:/r:ro"},
			{typ: "volume", source: "named", target: "/n", raw: "named:/n"},
		},
		hostNamespaces: []string{"--pid=host"}, devices: []string{"/dev/kvm"}, volumesFrom: []string{"other"}, env: []string{"A=1"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(runArgs{}, mountArg{})); diff != "" {
		t.Errorf("parseRunArgs (-want +got):\n%s", diff)
	}
}

func TestDockerSocket(t *testing.T) {
	tests := []struct {
		typ, src, dst string
		want          bool
	}{
		{"bind", "/var/run/docker.sock", "/var/run/docker.sock", true},
		{"bind", "/run", "/host", true},
		{"bind", "/", "/host", true},
		{"bind", "/var/run/", "/x", true},
		{"bind", "/home/u/proj", "/workspace", false},
		{"volume", "docker-data", "/var/lib/docker", false},
		{"bind", "/srv/docker.sock.d", "/x", true},
	}
	for _, tc := range tests {
		if got := dockerSocket(tc.typ, tc.src, tc.dst); got != tc.want {
			t.Errorf("dockerSocket(%s, %s, %s) = %v, want %v", tc.typ, tc.src, tc.dst, got, tc.want)
		}
	}
}

func TestRootUserAndOptions(t *testing.T) {
	for u, want := range map[string]bool{"": true, "0": true, "root": true, "0:0": true, "root:1000": true, "1000:1000": false, "agent": false} {
		if got := rootUser(u); got != want {
			t.Errorf("rootUser(%q) = %v, want %v", u, got, want)
		}
	}
	if !hasNoNewPrivileges([]string{"no-new-privileges:true"}) || hasNoNewPrivileges([]string{"no-new-privileges:false"}) {
		t.Error("hasNoNewPrivileges")
	}
	if got := unconfined([]string{"apparmor=unconfined", "seccomp:unconfined", "label=disable", "no-new-privileges"}); len(got) != 3 {
		t.Errorf("unconfined = %v", got)
	}
}

// TestAgentCapabilitiesAsDockerRecordsThem feeds the capability checks what Docker 20.10
// made of each set of flags: testdata/docker-caps.json holds, per set, the HostConfig
// `docker container inspect` printed for a container created with them (`docker create -u
// 1000:1000 --security-opt no-new-privileges FLAGS IMAGE`; Docker upper-cases and prefixes
// CAP_, and records a missing --cap-drop as null). The runspec check sees the flags, the live
// check the inspect; both must pass only the agent that drops ALL and adds nothing.
func TestAgentCapabilitiesAsDockerRecordsThem(t *testing.T) {
	var recorded []struct {
		Flags      []string
		HostConfig struct{ CapAdd, CapDrop []string }
	}
	data, err := os.ReadFile("testdata/docker-caps.json")
	if err == nil {
		err = json.Unmarshal(data, &recorded)
	}
	if err != nil || len(recorded) != 4 {
		t.Fatalf("testdata/docker-caps.json: %v (%d sets)", err, len(recorded))
	}
	sets := []struct {
		name string
		want []string // what the finding must name, in any case; none: OK
	}{
		{"drops ALL", nil},
		{"adds two", []string{"ADDS CAPABILITY", "NET_ADMIN", "SYS_PTRACE"}},
		{"drops nothing", []string{"NO --CAP-DROP ALL"}},
		{"adds ALL", []string{"ADDS CAPABILITY ALL"}},
	}
	for i, r := range recorded {
		want := sets[i].want
		t.Run(sets[i].name, func(t *testing.T) {
			f := newFixture(t, baseManifest).healthy()
			f.editRunSpec(func(rs *render.RunSpec) {
				rs.Agent.Args = append(removeArgs("--cap-drop", "ALL")(rs.Agent.Args), r.Flags...)
			})
			checkCapFinding(t, "boundary.capabilities (runspec)", boundaryResult(t, f, "boundary.capabilities").Finding, want)

			f = newFixture(t, baseManifest).daemonUp().built().noGateway()
			agent := f.liveAgent()
			host(agent)["CapAdd"], host(agent)["CapDrop"] = r.HostConfig.CapAdd, r.HostConfig.CapDrop
			f.running(f.liveNetd(), agent)
			checkCapFinding(t, "agent.capabilities (running)", f.run(agentCapabilities), want)
		})
	}
}

func checkCapFinding(t *testing.T, name string, got Finding, want []string) {
	t.Helper()
	if len(want) == 0 {
		wantStatus(t, name, got, OK)
		return
	}
	wantStatus(t, name, got, Fail)
	for _, w := range want {
		if !strings.Contains(strings.ToUpper(got.Detail), w) {
			t.Errorf("%s: detail %q does not say %q", name, got.Detail, w)
		}
	}
}
