package doctor

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/render"
)

// TestCleanFixturePasses: a project as `abox up` leaves it fails nothing and warns of nothing.
func TestCleanFixturePasses(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	for _, r := range Run(context.Background(), f.env(), All(), nil) {
		if r.Status == Fail || r.Status == Warn {
			t.Errorf("%s = %s: %s", r.ID, r.Status, r.Detail)
		}
	}
}

// TestRunSpecTamperBreaksItsInvariant breaks one invariant of the agent's argv at a time and
// expects exactly its agent.* check and its boundary.* twin to fail.
func TestRunSpecTamperBreaksItsInvariant(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(a []string) []string
		check    func(context.Context, *Env) Finding
		boundary string
		want     string
	}{
		{"docker socket mounted", appendArgs("--mount", "type=bind,source=/var/run/docker.sock,target=/var/run/docker.sock"),
			agentNoDockerSock, "boundary.no-docker-sock", "docker.sock"},
		{"docker socket through -v", appendArgs("-v", "/var/run:/host-run"), agentNoDockerSock, "boundary.no-docker-sock", "/var/run"},
		{"volumes from another container", appendArgs("--volumes-from", "abox-gw-default"), agentNoDockerSock, "boundary.no-docker-sock", "--volumes-from"},
		{"port published", appendArgs("-p", "127.0.0.1:8080:8080"), agentNoPublishedPorts, "boundary.no-published-ports", "publishes 127.0.0.1:8080:8080"},
		{"publish all", appendArgs("-P"), agentNoPublishedPorts, "boundary.no-published-ports", "publishes -P"},
		{"capability added", appendArgs("--cap-add", "NET_ADMIN"), agentCapabilities, "boundary.capabilities", "adds capability NET_ADMIN"},
		{"capability added with =", appendArgs("--cap-add=SYS_PTRACE"), agentCapabilities, "boundary.capabilities", "SYS_PTRACE"},
		{"no cap-drop", removeArgs("--cap-drop", "ALL"), agentCapabilities, "boundary.capabilities", "no --cap-drop ALL"},
		{"privileged", appendArgs("--privileged"), agentNotPrivileged, "boundary.not-privileged", "--privileged"},
		{"host pid namespace", appendArgs("--pid=host"), agentNotPrivileged, "boundary.not-privileged", "--pid=host"},
		{"seccomp off", appendArgs("--security-opt", "seccomp=unconfined"), agentNotPrivileged, "boundary.not-privileged", "seccomp=unconfined"},
		{"no no-new-privileges", removeArgs("--security-opt", "no-new-privileges"), agentNoNewPrivileges, "boundary.no-new-privileges", "no-new-privileges"},
		{"root user", appendArgs("-u", "0"), agentUser, "boundary.user", `"0"`},
		{"own network", replaceNetwork("abox-net"), agentNetwork, "boundary.network", "not \"container:abox-netd-demo-@RUN@\""},
		{"unknown runtime", appendArgs("--runtime", "runsc-netstack"), agentNetwork, "boundary.network", `agent --runtime is "runsc-netstack"`},
		{"runtime twice", appendArgs("--runtime", "runsc", "--runtime=runc"), agentNetwork, "boundary.network", "--runtime is given 2 times"},
		{"host network", replaceNetwork("host"), agentNoPublishedPorts, "boundary.no-published-ports", "shares the host's network"},
		{"state mounted", appendArgs("--mount", "type=bind,source=/STATE/gateways,target=/g,readonly"), agentMounts, "boundary.mounts", "abox's state"},
		{"artifacts writable", func(a []string) []string { return replaceValue(a, "/opt/abox,readonly", "/opt/abox") },
			agentMounts, "boundary.mounts", "artifacts mounted writable"},
		{"another project's cache", appendArgs("--mount", "type=volume,source=abox-cache-000000000000-npm,target=/home/agent/.cache/npm"),
			agentMounts, "boundary.mounts", "not this project's abox-cache-"},
		{"a volume elsewhere", appendArgs("--mount", "type=volume,source=abox-cache-x,target=/home/agent/.ssh"),
			agentMounts, "boundary.mounts", "unexpected mount"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest).healthy()
			f.editRunSpec(func(rs *render.RunSpec) {
				for i, a := range rs.Agent.Args {
					rs.Agent.Args[i] = strings.ReplaceAll(a, "/STATE", f.paths.State)
				}
				rs.Agent.Args = tc.edit(rs.Agent.Args)
				for i, a := range rs.Agent.Args {
					rs.Agent.Args[i] = strings.ReplaceAll(a, "/STATE", f.paths.State)
				}
			})
			got := f.run(tc.check)
			wantStatus(t, tc.name, got, Fail)
			if !strings.Contains(got.Detail, tc.want) {
				t.Errorf("detail %q does not mention %q", got.Detail, tc.want)
			}
			b := boundaryResult(t, f, tc.boundary)
			wantStatus(t, tc.boundary, b.Finding, Fail)
			wantStatus(t, "artifacts.integrity", f.run(artifactsIntegrity), Fail)
		})
	}
}

func appendArgs(extra ...string) func([]string) []string {
	return func(a []string) []string { return append(a, extra...) }
}

// removeArgs drops the pair flag value.
func removeArgs(flag, value string) func([]string) []string {
	return func(a []string) []string {
		for i := 0; i+1 < len(a); i++ {
			if a[i] == flag && a[i+1] == value {
				return append(a[:i:i], a[i+2:]...)
			}
		}
		return a
	}
}

func replaceNetwork(network string) func([]string) []string {
	return func(a []string) []string {
		i := slices.Index(a, "--network")
		a[i+1] = network
		return a
	}
}

func replaceValue(a []string, suffix, with string) []string {
	for i, v := range a {
		if strings.HasSuffix(v, suffix) {
			a[i] = strings.TrimSuffix(v, suffix) + with
		}
	}
	return a
}

func boundaryResult(t *testing.T, f *fixture, id string) Result {
	t.Helper()
	for _, r := range Boundary(context.Background(), f.env()) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no boundary check %s", id)
	return Result{}
}

// TestLiveContainerBreaksItsInvariant: the runspec is clean, but a running container of the
// project was made otherwise; the agent.* check sees it, the boundary.* twin (state only) not.
func TestLiveContainerBreaksItsInvariant(t *testing.T) {
	tests := []struct {
		name  string
		agent func(c map[string]any)
		check func(context.Context, *Env) Finding
		want  string
	}{
		{"docker socket mounted", func(c map[string]any) {
			c["Mounts"] = []map[string]any{{"Type": "bind", "Source": "/var/run/docker.sock", "Destination": "/var/run/docker.sock"}}
		}, agentNoDockerSock, "mounts /var/run/docker.sock"},
		{"port published", func(c map[string]any) {
			host(c)["PortBindings"] = map[string]any{"8080/tcp": []map[string]string{{"HostIp": "0.0.0.0", "HostPort": "8080"}}}
		}, agentNoPublishedPorts, "publishes 0.0.0.0:8080->8080/tcp"},
		{"capability added", func(c map[string]any) { host(c)["CapAdd"] = []string{"CAP_NET_ADMIN"} }, agentCapabilities, "adds capability CAP_NET_ADMIN"},
		{"no cap-drop", func(c map[string]any) { host(c)["CapDrop"] = nil }, agentCapabilities, "no --cap-drop ALL"},
		{"privileged", func(c map[string]any) { host(c)["Privileged"] = true }, agentNotPrivileged, "is privileged"},
		{"no no-new-privileges", func(c map[string]any) { host(c)["SecurityOpt"] = nil }, agentNoNewPrivileges, "no no-new-privileges"},
		{"root", func(c map[string]any) { c["Config"].(map[string]any)["User"] = "root" }, agentUser, `runs as "root"`},
		{"other network", func(c map[string]any) { host(c)["NetworkMode"] = "abox-net" }, agentNetwork, `network mode "abox-net"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest).daemonUp().built().noGateway()
			agent := f.liveAgent()
			tc.agent(agent)
			f.running(f.liveNetd(), agent)
			got := f.run(tc.check)
			wantStatus(t, tc.name, got, Fail)
			if !strings.Contains(got.Detail, "running agent agent-demo-0123abcd: "+tc.want) {
				t.Errorf("detail %q does not mention %q", got.Detail, tc.want)
			}
		})
	}
}

func host(c map[string]any) map[string]any { return c["HostConfig"].(map[string]any) }

// TestLiveSandboxWellFormed: a running sandbox made from the runspec passes every agent check.
func TestLiveSandboxWellFormed(t *testing.T) {
	f := newFixture(t, baseManifest).daemonUp().built().noGateway()
	f.running(f.liveNetd(), f.liveAgent())
	for _, c := range []func(context.Context, *Env) Finding{agentNoDockerSock, agentNoPublishedPorts, agentCapabilities,
		agentNotPrivileged, agentNoNewPrivileges, agentUser, agentNetwork, netdCapabilities, netdPrivilegedPorts} {
		got := f.run(c)
		wantStatus(t, "live check", got, OK)
		if !strings.Contains(got.Detail, "2 running container(s)") {
			t.Errorf("detail %q does not count the running containers", got.Detail)
		}
	}
}

// TestNetdCapabilities offers netd every Linux capability (the kernel's names, CAP_CHOWN = 0
// to CAP_CHECKPOINT_RESTORE = 40) one at a time, in the runspec and on a running netd. The
// expected set is written out here, not read from render.NetdCaps, which the check itself uses:
// a capability added there fails this test until it is added here too.
func TestNetdCapabilities(t *testing.T) {
	needed := []string{"NET_ADMIN", "SETUID", "SETGID", "DAC_READ_SEARCH"}
	linux := []string{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
		"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK",
		"IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT",
		"SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
		"SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON",
		"BPF", "CHECKPOINT_RESTORE"}
	if len(linux) != 41 {
		t.Fatalf("%d capability names, want the kernel's 41", len(linux))
	}
	for _, c := range linux {
		want := Fail
		if slices.Contains(needed, c) {
			want = OK
		}
		t.Run(c, func(t *testing.T) {
			f := newFixture(t, baseManifest).healthy()
			f.editRunSpec(func(rs *render.RunSpec) { rs.Netd.Args = append(rs.Netd.Args, "--cap-add", c) })
			wantStatus(t, "netd.capabilities (runspec)", f.run(netdCapabilities), want)

			f = newFixture(t, baseManifest).daemonUp().built().noGateway()
			netd := f.liveNetd()
			host(netd)["CapAdd"] = append(host(netd)["CapAdd"].([]string), "CAP_"+c) // as Docker records it
			f.running(netd, f.liveAgent())
			wantStatus(t, "netd.capabilities (running)", f.run(netdCapabilities), want)
		})
	}
}

// TestNetdPrivilegedPorts: without --sysctl net.ipv4.ip_unprivileged_port_start=1024 on netd
// (Docker's default is 0 in a container), the agent could bind 127.0.0.11:53 in the namespace
// it shares with netd; doctor fails the runspec, its boundary twin, and a running netd made
// without it.
func TestNetdPrivilegedPorts(t *testing.T) {
	drop := func(rs *render.RunSpec) {
		rs.Netd.Args = removeArgs("--sysctl", "net.ipv4.ip_unprivileged_port_start=1024")(rs.Netd.Args)
	}
	for _, tc := range []struct {
		name string
		edit func(rs *render.RunSpec)
	}{
		{"removed", drop},
		{"lowered", func(rs *render.RunSpec) {
			drop(rs)
			rs.Netd.Args = append(rs.Netd.Args, "--sysctl", "net.ipv4.ip_unprivileged_port_start=0")
		}},
		{"overridden later", func(rs *render.RunSpec) {
			rs.Netd.Args = append(rs.Netd.Args, "--sysctl=net.ipv4.ip_unprivileged_port_start=53")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest).healthy()
			wantStatus(t, "netd.privileged-ports before", f.run(netdPrivilegedPorts), OK)
			f.editRunSpec(tc.edit)
			got := f.run(netdPrivilegedPorts)
			wantStatus(t, "netd.privileged-ports", got, Fail)
			if !strings.Contains(got.Detail, "the agent could bind any port") {
				t.Errorf("detail %q", got.Detail)
			}
			wantStatus(t, "boundary.netd-ports", boundaryResult(t, f, "boundary.netd-ports").Finding, Fail)
		})
	}
	f := newFixture(t, baseManifest).daemonUp().built().noGateway()
	netd := f.liveNetd()
	delete(host(netd), "Sysctls")
	f.running(netd, f.liveAgent())
	if got := f.run(netdPrivilegedPorts); got.Status != Fail || !strings.Contains(got.Detail, "running netd") {
		t.Errorf("a running netd without the setting: %+v", got)
	}
}

func TestTamperedArtifact(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	f.writeArtifact("agent/mcp.json", []byte(`{"mcpServers":{"x":{"type":"http","url":"http://evil.example/mcp"}}}`))
	got := f.run(artifactsIntegrity)
	wantStatus(t, "artifacts.integrity", got, Fail)
	if !strings.Contains(got.Detail, "agent/mcp.json (modified)") {
		t.Errorf("detail %q", got.Detail)
	}
	wantStatus(t, "agent.mcp-forwarder", f.run(agentMCPForwarder), Fail)
	wantStatus(t, "boundary.artifacts-current", boundaryResult(t, f, "boundary.artifacts-current").Finding, Fail)
}

func TestBaseImagePinned(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "images.base-pinned", f.run(imagesBasePinned), OK)
	f.cfg.Image.Base = "debian:bookworm-slim"
	f.render()
	got := f.run(imagesBasePinned)
	wantStatus(t, "images.base-pinned (tag)", got, Warn)
	if !strings.Contains(got.Detail, "Dockerfile: debian:bookworm-slim") {
		t.Errorf("detail %q", got.Detail)
	}
}

// TestNetdRuntime: netd's ruleset must be the host kernel's, so netd runs under runc whatever
// the agent's runtime; doctor fails a runspec or a running netd under another one, and accepts
// an agent under runsc.
func TestNetdRuntime(t *testing.T) {
	f := newFixture(t, baseManifest).healthy()
	f.editRunSpec(func(rs *render.RunSpec) { rs.Agent.Args = append(rs.Agent.Args, "--runtime", "runsc") })
	wantStatus(t, "agent.network, agent under runsc", f.run(agentNetwork), OK)

	f = newFixture(t, baseManifest).healthy()
	f.editRunSpec(func(rs *render.RunSpec) { rs.Netd.Args = append(rs.Netd.Args, "--runtime", "runsc") })
	got := f.run(agentNetwork)
	wantStatus(t, "agent.network, netd under runsc", got, Fail)
	if !strings.Contains(got.Detail, `netd --runtime is "runsc"`) {
		t.Errorf("detail %q does not name netd's runtime", got.Detail)
	}

	f = newFixture(t, baseManifest).daemonUp().built().noGateway()
	netd := f.liveNetd()
	host(netd)["Runtime"] = "runsc"
	f.running(netd, f.liveAgent())
	got = f.run(agentNetwork)
	wantStatus(t, "agent.network, running netd under runsc", got, Fail)
	if !strings.Contains(got.Detail, `runs under "runsc"`) {
		t.Errorf("detail %q does not name the running netd's runtime", got.Detail)
	}
}

// TestIsolatedMountTamper: the /workspace mount of an isolated run must be the run's own clone
// in the project's state, writable, and nothing else.
func TestIsolatedMountTamper(t *testing.T) {
	tests := []struct{ name, mount, mode, want string }{
		{"the user's checkout", "type=bind,source=WS,target=/workspace", "isolated", "an isolated run would mount"},
		{"all clones", "type=bind,source=CLONES,target=/workspace", "isolated", "an isolated run would mount"},
		{"abox's state", "type=bind,source=STATE,target=/workspace", "isolated", "an isolated run would mount"},
		{"another target", "type=bind,source=CLONES/@RUN@,target=/", "isolated", "an isolated run would mount"},
		{"a volume", "type=volume,source=x,target=/workspace", "isolated", "an isolated run would mount"},
		{"a climb out", "type=bind,source=CLONES/@RUN@/../..,target=/workspace", "isolated", "an isolated run would mount"},
		{"unknown mode", "type=bind,source=CLONES/@RUN@,target=/workspace", "shared", `workspace is "shared"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest).healthy()
			f.editRunSpec(func(rs *render.RunSpec) {
				r := strings.NewReplacer("WS", f.env().Project.Workspace, "CLONES", f.env().Project.Clones(), "STATE", f.paths.State)
				rs.Isolated, rs.Workspace = r.Replace(tc.mount), tc.mode
			})
			got := f.run(agentMounts)
			wantStatus(t, tc.name, got, Fail)
			if !strings.Contains(got.Detail, tc.want) {
				t.Errorf("detail %q does not mention %q", got.Detail, tc.want)
			}
		})
	}
	f := newFixture(t, baseManifest).healthy()
	wantStatus(t, "as rendered", f.run(agentMounts), OK)
}
