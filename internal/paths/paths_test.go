package paths

import (
	"path/filepath"
	"strings"
	"testing"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnvPrecedence(t *testing.T) {
	tests := []struct {
		name       string
		env        func(string) (string, bool)
		cfg, state string
	}{
		{"home only", env("HOME", "/home/u"), "/home/u/.config/abox", "/home/u/.local/state/abox"},
		{"xdg", env("HOME", "/home/u", "XDG_CONFIG_HOME", "/x/c", "XDG_STATE_HOME", "/x/s"), "/x/c/abox", "/x/s/abox"},
		{"abox wins over xdg", env("HOME", "/home/u", "XDG_CONFIG_HOME", "/x/c", "ABOX_CONFIG_HOME", "/a/c", "ABOX_STATE_HOME", "/a/s"), "/a/c", "/a/s"},
		{"relative xdg is ignored, as the spec says", env("HOME", "/home/u", "XDG_CONFIG_HOME", "rel"), "/home/u/.config/abox", "/home/u/.local/state/abox"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := FromEnv(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if p.Config != tc.cfg || p.State != tc.state {
				t.Errorf("FromEnv = %+v, want config %s state %s", p, tc.cfg, tc.state)
			}
		})
	}
}

func TestFromEnvNeedsHome(t *testing.T) {
	_, err := FromEnv(env())
	if err == nil || !strings.Contains(err.Error(), "HOME") {
		t.Errorf("FromEnv without HOME: err = %v, want one naming HOME", err)
	}
	// With both own variables set, HOME is not needed.
	if _, err := FromEnv(env("ABOX_CONFIG_HOME", "/c", "ABOX_STATE_HOME", "/s")); err != nil {
		t.Errorf("FromEnv with ABOX_*_HOME: %v", err)
	}
}

func TestProjectLayout(t *testing.T) {
	p := Paths{Config: "/c", State: "/s"}
	pr := p.Project("/home/u/proj")
	if pr.Hash != Hash("/home/u/proj") || len(pr.Hash) != 12 {
		t.Fatalf("hash %q", pr.Hash)
	}
	if Hash("/home/u/proj") == Hash("/home/u/proj2") {
		t.Error("two workspaces share a hash")
	}
	want := filepath.Join("/s", "projects", pr.Hash)
	for got, rel := range map[string]string{
		pr.Dir: "", pr.Artifacts(): "artifacts", pr.Runs(): "runs", pr.RunsIndex(): "runs.jsonl", pr.Approved(): "approved.yaml",
		pr.Clone("ab12"): "clones/ab12", pr.IsolatedRun("ab12"): "isolated/ab12.json",
	} {
		if got != filepath.Join(want, rel) {
			t.Errorf("%s is not under %s", got, want)
		}
	}
	if g := p.Gateway("dev"); g != "/s/gateways/dev" {
		t.Errorf("Gateway(dev) = %s", g)
	}
}

func TestExpandHome(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"~", "/home/me"},
		{"~/", "/home/me"},
		{"~/certs/ca.pem", "/home/me/certs/ca.pem"},
		{"~other/x", "~other/x"},
		{"/abs/~/x", "/abs/~/x"},
		{"rel/x", "rel/x"},
		{"", ""},
	} {
		if got := ExpandHome(tc.in, "/home/me"); got != tc.want {
			t.Errorf("ExpandHome(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
