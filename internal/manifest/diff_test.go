package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, y string) *Manifest {
	t.Helper()
	if !strings.Contains(y, "profile:") {
		y = "profile: default\n" + y
	}
	m, err := Parse([]byte("version: 1\nproject: p\n"+y), FileName)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

func TestWidening(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"same", "egress: [a.example.com]\n", "egress: [a.example.com]\n", nil},
		{"case and trailing dot are the same host", "egress: [a.example.com]\n", "egress: [A.Example.com.]\n", nil},
		{"host added", "egress: [a.example.com]\n", "egress: [a.example.com, evil.example.net]\n", []string{"+ egress: evil.example.net"}},
		{"host removed narrows", "egress: [a.example.com, b.example.com]\n", "egress: [a.example.com]\n", nil},
		{"mask removed", "mounts: {mask: [.env, secrets/]}\n", "mounts: {mask: [.env]}\n", []string{"- mounts.mask: secrets/ (no longer applied)"}},
		{"watch removed", "mounts: {watch: [Makefile]}\n", "", []string{"- mounts.watch: Makefile (no longer applied)"}},
		{"context added", "", "mounts: {context: [/srv/data]}\n", []string{"+ mounts.context: /srv/data"}},
		{"secret attached", "", "env_secrets: {TOKEN: t.x}\n", []string{"+ env_secrets: TOKEN ← t.x"}},
		{"server added", "servers: [a]\n", "servers: [a, b]\n", []string{"+ servers: b"}},
		{"profile changed", "", "profile: work\n", []string{"+ profile: default → work (another gateway, and the servers of its projects)"}},
		{"toolchain added", "toolchains: [go]\n", "toolchains: [go, python]\n", []string{"+ toolchains: python"}},
		{"toolchain removed narrows", "toolchains: [go, python]\n", "toolchains: [go]\n", nil},
		{"narrowing removed", "servers: [a]\ntools: {a: [x]}\n", "servers: [a]\n", []string{"- tools.a: narrowing removed (every tool allowed)"}},
		{"network none removed", "servers: [a]\nserver_network: {a: none}\n", "servers: [a]\n", []string{"- server_network.a: none removed (the server gets network)"}},
		{"connectors on", "", "run: {connectors: true}\n", []string{"+ run.connectors: true (claude.ai connectors, a second MCP path)"}},
		{"mode changed", "", "run: {permission_mode: bypassPermissions}\n", []string{"+ run.permission_mode: default → bypassPermissions"}},
		{"exec change no longer fails", "run: {on_exec_change: fail}\n", "run: {on_exec_change: warn}\n",
			[]string{"- run.on_exec_change: fail (a run that changes what runs outside the sandbox no longer fails)"}},
		{"exec change default is warn", "run: {on_exec_change: fail}\n", "", []string{"- run.on_exec_change: fail (a run that changes what runs outside the sandbox no longer fails)"}},
		{"exec change made to fail narrows", "", "run: {on_exec_change: fail}\n", nil},
		{"runtime runsc dropped", "run: {runtime: runsc}\n", "run: {runtime: runc}\n",
			[]string{"- run.runtime: runsc (the agent's syscalls reach the host's kernel again, unless config.yaml's defaults.runtime is runsc)"}},
		{"runtime runsc unset", "run: {runtime: runsc}\n", "", []string{"- run.runtime: runsc (the agent's syscalls reach the host's kernel again, unless config.yaml's defaults.runtime is runsc)"}},
		{"runtime made runsc narrows", "", "run: {runtime: runsc}\n", nil},
		{"isolated dropped", "run: {workspace: isolated}\n", "run: {workspace: live}\n", []string{"- run.workspace: isolated (the agent writes your checkout itself again)"}},
		{"isolated unset", "run: {workspace: isolated}\n", "", []string{"- run.workspace: isolated (the agent writes your checkout itself again)"}},
		{"made isolated narrows", "", "run: {workspace: isolated}\n", nil},
		{"cache added", "", "mounts: {caches: [npm]}\n", []string{"+ mounts.caches: npm"}},
		{"cache dropped narrows", "mounts: {caches: [npm]}\n", "", nil},
		{"remote url changed",
			"remote_servers: {r: {url: 'https://a.example.com/mcp'}}\n",
			"remote_servers: {r: {url: 'https://evil.example.net/mcp'}}\n",
			[]string{"+ remote_servers.r: url, headers or secrets changed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Widening(mustParse(t, tc.old), mustParse(t, tc.new))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Widening mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLineDiff(t *testing.T) {
	if got := LineDiff("a\nb\n", "a\nb\n"); got != "" {
		t.Errorf("LineDiff(equal) = %q, want empty", got)
	}
	got := LineDiff("a\nb\nc\n", "a\nx\nc\n")
	want := "  a\n- b\n+ x\n  c\n"
	if got != want {
		t.Errorf("LineDiff = %q, want %q", got, want)
	}
	// Large inputs fall back to whole blocks without building a quadratic table.
	big := strings.Repeat("line\n", 5000)
	got = LineDiff(big+"old\n"+big, big+"new\n"+big)
	if !strings.Contains(got, "- old\n+ new\n") {
		t.Errorf("LineDiff(big) does not show the change")
	}
}
