package project

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/paths"
)

func fixture(t *testing.T, manifest string) (string, paths.Paths) {
	t.Helper()
	root := t.TempDir()
	env := map[string]string{"HOME": root, "ABOX_CONFIG_HOME": filepath.Join(root, "cfg"), "ABOX_STATE_HOME": filepath.Join(root, "state")}
	ps, err := paths.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "work")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(ps.Config, 0o700)
	if err := os.WriteFile(filepath.Join(ws, "agentbox.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, ps
}

const good = "version: 1\nproject: p\nprofile: default\n"

func TestLoad(t *testing.T) {
	ws, ps := fixture(t, good)
	p, err := Load(ws, ps)
	if err != nil {
		t.Fatal(err)
	}
	if p.Workspace != ws || p.Manifest.Project != "p" || string(p.Raw) != good || p.Config == nil || p.State != ps.Project(ws) {
		t.Errorf("Load = %+v", p)
	}
	unlock, err := p.Lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}

func TestLoadErrors(t *testing.T) {
	t.Run("unknown profile", func(t *testing.T) {
		ws, ps := fixture(t, "version: 1\nproject: p\nprofile: nope\n")
		var pe *ProfileError
		_, err := Load(ws, ps)
		if !errors.As(err, &pe) || pe.Profile != "nope" || pe.ConfigFile != ps.ConfigFile() ||
			err.Error() != `agentbox.yaml: profile "nope" is not configured (known: default)` {
			t.Errorf("Load = %v", err)
		}
	})
	t.Run("bad manifest", func(t *testing.T) {
		ws, ps := fixture(t, "version: 1\nbogus: 1\n")
		var me *ManifestError
		if _, err := Load(ws, ps); !errors.As(err, &me) {
			t.Errorf("Load = %v, want a ManifestError", err)
		}
	})
	for _, file := range []string{"config.yaml", "custom-servers.yaml"} {
		t.Run("bad "+file, func(t *testing.T) {
			ws, ps := fixture(t, good)
			path := filepath.Join(ps.Config, file)
			os.WriteFile(path, []byte("bogus: [1\n"), 0o600)
			var ce *ConfigError
			if _, err := Load(ws, ps); !errors.As(err, &ce) || ce.File != path {
				t.Errorf("Load = %v, want a ConfigError naming %s", err, path)
			}
		})
	}
}

func TestIdentityFromConfig(t *testing.T) {
	ws, ps := fixture(t, good)
	os.WriteFile(ps.ConfigFile(), []byte("agent:\n  uid: 1234\n  gid: 2345\n"), 0o600)
	p, err := Load(ws, ps)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Identity()
	if err != nil || id.String() != "1234:2345" {
		t.Errorf("Identity = %v, %v; want config.yaml's 1234:2345", id, err)
	}
	if !strings.Contains(ps.ConfigFile(), "cfg") {
		t.Errorf("ConfigFile = %s", ps.ConfigFile())
	}
}

// TestSpec: the spec carries the project, the host's values and the agent's identity, and a
// CA certificate that cannot be read fails it rather than rendering without it.
func TestSpec(t *testing.T) {
	ws, ps := fixture(t, good)
	os.WriteFile(ps.ConfigFile(), []byte("agent:\n  uid: 1234\n  gid: 2345\n"), 0o600)
	p, err := Load(ws, ps)
	if err != nil {
		t.Fatal(err)
	}
	h := Host{Version: "v1", Home: t.TempDir(), NetdBinary: "sum", Resolvers: []string{"192.0.2.1:53"}, MCPHome: t.TempDir()}
	s, err := p.Spec(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != "v1" || s.NetdBinary != "sum" || s.Manifest != p.Manifest || s.Agent.String() != "1234:2345" ||
		len(s.Resolvers) != 1 || s.Catalog == nil || s.Project != p.State {
		t.Errorf("Spec = %+v", s)
	}
	os.WriteFile(ps.ConfigFile(), []byte("image:\n  ca_certificates: [/nonexistent/ca.crt]\n"), 0o600)
	if p, err = Load(ws, ps); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Spec(context.Background(), h); err == nil {
		t.Error("Spec rendered without a CA certificate it could not read")
	}
}
