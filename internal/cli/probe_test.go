package cli

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/setup"
)

// fakeProbe is a host whose tools report fixed answers.
type fakeProbe struct {
	npm, goProxy, goSumDB string
	resolvers             []string
}

func (p *fakeProbe) NPMRegistry(context.Context) (string, error) {
	if p.npm == "" {
		return "", errors.New("exec: \"npm\": executable file not found in $PATH")
	}
	return p.npm, nil
}

func (p *fakeProbe) GoEnv(context.Context, ...string) ([]string, error) {
	return []string{p.goProxy, p.goSumDB}, nil
}

func (p *fakeProbe) Resolvers() []string { return p.resolvers }

// TestHostProbeInjected: what init suggests and what rendering takes from the host's tools come
// from App.Probe, never from the tools on this machine.
func TestHostProbeInjected(t *testing.T) {
	probe := &fakeProbe{npm: "https://npm.mirror.test/", goProxy: "https://proxy.mirror.test/go,direct", goSumDB: "sum.mirror.test", resolvers: []string{"192.0.2.53:53"}}
	a, p, _ := nativeFixture(t, nativeSum)
	a.Probe = probe
	got := setup.SuggestEgress(context.Background(), a.probe(), []string{"go", "node"})
	want := map[string][]string{"go": {"proxy.mirror.test", "sum.mirror.test"}, "node": {"npm.mirror.test"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("setup.SuggestEgress (-want +got):\n%s", diff)
	}

	p.Config.ClaudeCode = config.ClaudeCode{Source: config.SourceNPM, Version: "2.1.0"}
	p.Config.Image.CACertificates = nil
	p.State.Workspace = t.TempDir()
	uid := 1000
	p.Config.Agent = config.Agent{UID: &uid, GID: &uid}
	s, err := a.spec(p)
	if err != nil {
		t.Fatalf("spec = %v", err)
	}
	if s.NPMRegistry != "https://npm.mirror.test/" || !cmp.Equal(s.Resolvers, []string{"192.0.2.53:53"}) {
		t.Errorf("spec has npm registry %q and resolvers %q, want the probe's", s.NPMRegistry, s.Resolvers)
	}
}
