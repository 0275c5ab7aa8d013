package doctor

import (
	"context"
	"testing"

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
