package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

// TestLoad: Load returns an Env whatever failed to load, with the error kept for the checks;
// Render is set only when the manifest, the configuration and its profile all load, and it
// renders the project Load read.
func TestLoad(t *testing.T) {
	errSpec := errors.New("spec called")
	tests := []struct {
		name       string
		manifest   string // agentbox.yaml; "" writes none
		config     string // config.yaml; "" writes none (the defaults)
		wantMErr   bool
		wantCfgErr bool
		wantRender bool
	}{
		{"loads", baseManifest, "", false, false, true},
		{"manifest does not parse", "version: 1\nproject: demo\nbogus: 1\n", "", true, false, false},
		{"no manifest", "", "", true, false, false},
		{"profile not configured", "version: 1\nproject: demo\nprofile: elsewhere\negress: [example.com]\n", "", false, false, false},
		{"config does not parse", baseManifest, "bogus_key: 1\n", false, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, baseManifest)
			if tc.manifest == "" {
				os.Remove(filepath.Join(f.ws, manifest.FileName))
			} else {
				f.writeWS(manifest.FileName, tc.manifest)
			}
			if tc.config != "" {
				mkdir(t, f.paths.Config)
				if err := os.WriteFile(f.paths.ConfigFile(), []byte(tc.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var got *project.Project
			e := Load(f.ws, Host{Paths: f.paths, Home: "/home/u", MCPHome: f.mcpHome, BinarySHA256: f.binary,
				Spec: func(p *project.Project) (render.Spec, error) { got = p; return render.Spec{}, errSpec }})
			if e.Project != f.project || e.BinarySHA256 != f.binary || e.Home != "/home/u" {
				t.Errorf("Load: project %+v, binary %q, home %q; want the workspace's and the host's", e.Project, e.BinarySHA256, e.Home)
			}
			if (e.ManifestErr != nil) != tc.wantMErr || (e.Manifest == nil) != tc.wantMErr {
				t.Errorf("Load: manifest %v, error %v; want an error: %v", e.Manifest != nil, e.ManifestErr, tc.wantMErr)
			}
			if (e.ConfigErr != nil) != tc.wantCfgErr || (e.Catalog == nil) != tc.wantCfgErr {
				t.Errorf("Load: config error %v, catalog %v; want a config error: %v", e.ConfigErr, e.Catalog != nil, tc.wantCfgErr)
			}
			if (e.Render != nil) != tc.wantRender {
				t.Fatalf("Load: Render set %v, want %v", e.Render != nil, tc.wantRender)
			}
			if !tc.wantRender {
				return
			}
			if _, err := e.Render(); !errors.Is(err, errSpec) {
				t.Errorf("Render() = %v, want the Spec's error", err)
			}
			if got == nil || got.Manifest.Project != "demo" || got.Workspace != f.ws || got.State != f.project || got.Config == nil {
				t.Errorf("Spec got %+v, want the project Load read", got)
			}
		})
	}
}

// TestBoundaryFailures: a project as `abox up` leaves it fails no boundary check; one whose
// rendered artifacts are gone fails, and no docker is asked (the fixture's fake has no reply).
func TestBoundaryFailures(t *testing.T) {
	f := newFixture(t, baseManifest)
	spec := f.spec()
	p := &project.Project{Workspace: f.ws, Manifest: spec.Manifest, Raw: []byte(f.manifest), Config: f.cfg, Paths: f.paths, State: f.project}
	h := Host{Home: "/home/u", Now: func() time.Time { return fixedNow }, Spec: func(*project.Project) (render.Spec, error) { return spec, nil }}
	if failed := BoundaryFailures(context.Background(), p, h); len(failed) != 0 {
		t.Errorf("BoundaryFailures of a project that is up = %+v, want none", failed)
	}
	if err := os.RemoveAll(f.project.Artifacts()); err != nil {
		t.Fatal(err)
	}
	failed := BoundaryFailures(context.Background(), p, h)
	if len(failed) == 0 || failed[0].ID != "boundary.artifacts" {
		t.Errorf("BoundaryFailures without artifacts = %+v, want boundary.artifacts first", failed)
	}
}

// TestSkipSet: known ids are skipped; an unknown one is refused, naming it.
func TestSkipSet(t *testing.T) {
	checks := All()
	set, err := SkipSet([]string{checks[0].ID, checks[1].ID}, checks)
	if err != nil || len(set) != 2 || !set[checks[0].ID] || !set[checks[1].ID] {
		t.Errorf("SkipSet(known) = %v, %v", set, err)
	}
	var ue *UnknownCheckError
	set, err = SkipSet([]string{checks[0].ID, "host.no-such-check"}, checks)
	if set != nil || !errors.As(err, &ue) || ue.ID != "host.no-such-check" {
		t.Errorf("SkipSet(unknown) = %v, %v; want an *UnknownCheckError", set, err)
	}
	if set, err := SkipSet(nil, checks); err != nil || len(set) != 0 {
		t.Errorf("SkipSet(none) = %v, %v", set, err)
	}
}
