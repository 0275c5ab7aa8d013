package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/manifest"
)

// TestFingerprintChanges: every input of the gateway changes the fingerprint, and Diff names it.
func TestFingerprintChanges(t *testing.T) {
	base := newFixture(t)
	before := base.plan(t).Fingerprint
	tests := []struct {
		name   string
		change func(t *testing.T, f *fixture, in *PlanInput)
		want   []string
	}{
		{"image", func(_ *testing.T, f *fixture, _ *PlanInput) {
			f.cfg.Gateway.Image = "docker/mcp-gateway@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
		}, []string{"image"}},
		{"network", func(_ *testing.T, f *fixture, _ *PlanInput) { f.cfg.Network = "other-net" }, []string{"network"}},
		{"port", func(_ *testing.T, f *fixture, _ *PlanInput) { f.cfg.Profiles["dev"] = config.Profile{Port: 9000} }, []string{"port"}},
		{"token rotation", func(_ *testing.T, _ *fixture, in *PlanInput) { in.Token = "rotated" }, []string{"token"}},
		{"secrets appear", func(_ *testing.T, _ *fixture, in *PlanInput) {
			in.Secrets = Secrets{Data: SecretData("github.personal_access_token=x\n"), Digest: "pbkdf2-sha256$1$aa"}
		}, []string{"secrets"}},
		{"server set", func(t *testing.T, f *fixture, _ *PlanInput) {
			rebind(t, f, "bbbbbbbbbbbb", &manifest.Manifest{Project: "api", Servers: []string{"github", "fetch"}})
		}, []string{"servers", "tools", "catalog"}},
		{"narrowing", func(t *testing.T, f *fixture, _ *PlanInput) {
			rebind(t, f, "bbbbbbbbbbbb", &manifest.Manifest{Project: "api", Servers: []string{"github", "fetch", "time"}})
		}, []string{"tools"}},
		{"network-none set", func(t *testing.T, f *fixture, _ *PlanInput) {
			rebind(t, f, "bbbbbbbbbbbb", &manifest.Manifest{Project: "api", Servers: []string{"github", "fetch", "time"},
				Tools: map[string][]string{"time": {"now"}}, ServerNetwork: map[string]string{"github": "none"}})
		}, []string{"catalog", "server_network"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			in := PlanInput{Profile: "dev", Dir: f.dir, Config: f.cfg, Catalog: f.cat, Custom: f.custom, Token: testToken}
			tc.change(t, f, &in)
			in.Registry = f.reg
			p, err := NewPlan(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, before.Diff(p.Fingerprint)); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
			if p.Fingerprint.Sum() == before.Sum() {
				t.Error("Sum did not change")
			}
		})
	}
}

func rebind(t *testing.T, f *fixture, hash string, m *manifest.Manifest) {
	t.Helper()
	if _, err := Bind(f.gwDir, "dev", hash, NewBinding("/src/"+m.Project, m, f.custom)); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.reg, err = LoadRegistry(f.dir, "dev"); err != nil {
		t.Fatal(err)
	}
}

func TestFingerprintStable(t *testing.T) {
	f := newFixture(t)
	if a, b := f.plan(t).Fingerprint, f.plan(t).Fingerprint; a.Sum() != b.Sum() || len(a.Diff(b)) != 0 {
		t.Error("the same inputs give different fingerprints")
	}
}

func TestFingerprintFile(t *testing.T) {
	f := newFixture(t)
	fp := f.plan(t).Fingerprint
	if err := fp.Save(f.dir); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(f.dir, FingerprintFile))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(filepath.Join(f.dir, FingerprintFile))
	if strings.Contains(string(data), testToken) {
		t.Error("fingerprint.json holds the token")
	}
	got, ok, err := LoadFingerprint(f.dir)
	if err != nil || !ok || got.Sum() != fp.Sum() {
		t.Errorf("LoadFingerprint = %+v, %v, %v", got, ok, err)
	}
	golden(t, "fingerprint.json", data)
}
