package gateway

import (
	"strings"
	"testing"
)

func TestRunArgsGolden(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t)
	p.Container.CatalogFile = "/state/gateways/dev/catalog.yaml"
	p.Container.SecretsFile = "/state/gateways/dev/secrets.env"
	args := p.Container.RunArgs("/state/gateways/dev/.gateway-env-123")
	golden(t, "run.args.txt", []byte(strings.Join(args, "\n")+"\n"))
	joined := strings.Join(args, "\n")
	if strings.Contains(joined, testToken) || strings.Contains(joined, TokenEnv+"=") {
		t.Error("the token reaches the argv")
	}
	for _, bad := range []string{"--publish", "-p", "--allow-unauthenticated", "--profile", "--watch", "--static", "docker-desktop"} {
		for _, a := range args {
			if a == bad || strings.HasPrefix(a, bad+"=") || strings.Contains(a, "docker-desktop") && bad == "docker-desktop" {
				t.Errorf("argv holds %q", a)
			}
		}
	}
	if n := strings.Count(joined, "--network"); n != 1 {
		t.Errorf("argv has %d --network flags, want exactly one", n)
	}
}

func TestRunArgsWithoutSecrets(t *testing.T) {
	p := newFixture(t).plan(t)
	args := strings.Join(p.Container.RunArgs("/env"), "\n")
	if strings.Contains(args, "target=/run/secrets") {
		t.Error("a secrets file is mounted though none exists")
	}
	if !strings.Contains(args, "--secrets=/run/secrets/abox-dev.env") {
		t.Error("--secrets does not name the file (the default would be docker-desktop)")
	}
}

func TestProbeArgsGolden(t *testing.T) {
	args := ProbeArgs("dev", "abox-net", "abox-netd:0123456789ab", 8812)
	golden(t, "probe.args.txt", []byte(strings.Join(args, "\n")+"\n"))
}

func TestArgValue(t *testing.T) {
	args := []string{"--transport=streaming", "--servers=a,b", "--tools="}
	if v, ok := ArgValue(args, "--servers"); !ok || v != "a,b" {
		t.Errorf("ArgValue(--servers) = %q, %v", v, ok)
	}
	if v, ok := ArgValue(args, "--tools"); !ok || v != "" {
		t.Errorf("ArgValue(--tools) = %q, %v", v, ok)
	}
	if _, ok := ArgValue(args, "--port"); ok {
		t.Error("ArgValue(--port) found a missing flag")
	}
}
