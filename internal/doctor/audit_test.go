package doctor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

// TestAudit: every check reports, skipped ones as skipped; with probes, the probe checks join
// and the sandbox is started first, said on Progress. No daemon answers here (Docker is nil), so
// the checks that need one say so rather than fail the test.
func TestAudit(t *testing.T) {
	f := newFixture(t, baseManifest)
	for _, probe := range []bool{false, true} {
		e := f.env()
		e.Docker = nil
		var progress bytes.Buffer
		e.Progress = &progress
		skip := All()[0].ID
		rep, err := Audit(context.Background(), e, probe, []string{skip})
		if err != nil {
			t.Fatalf("Audit(probe %v) = %v", probe, err)
		}
		want := len(All())
		if probe {
			want += len(Probes())
		}
		if len(rep.Checks) != want || rep.Checks[0].ID != skip || rep.Checks[0].Status != Skip {
			t.Errorf("Audit(probe %v): %d checks, the first %+v; want %d, %s skipped", probe, len(rep.Checks), rep.Checks[0], want, skip)
		}
		if said := strings.Contains(progress.String(), "probing: a throwaway sandbox tries each escape route as the agent user\n"); said != probe {
			t.Errorf("Audit(probe %v) progress = %q", probe, progress.String())
		}
		if probe && !strings.HasPrefix(rep.Checks[len(rep.Checks)-1].ID, "probe.") {
			t.Errorf("Audit with probes ends with %s, want a probe", rep.Checks[len(rep.Checks)-1].ID)
		}
	}
}

// TestAuditRefusesUnknownSkip: a mistyped --skip id is refused before any check or probe runs.
func TestAuditRefusesUnknownSkip(t *testing.T) {
	f := newFixture(t, baseManifest) // its fake docker has no reply: a check that ran would fail the test
	e := f.env()
	var progress bytes.Buffer
	e.Progress = &progress
	var ue *UnknownCheckError
	if _, err := Audit(context.Background(), e, true, []string{"host.no-such-check"}); !errors.As(err, &ue) || progress.Len() != 0 {
		t.Errorf("Audit = %v, progress %q; want an *UnknownCheckError and nothing run", err, progress.String())
	}
}

// TestCheckBoundary: a project as `abox up` leaves it passes; artifacts others can write are a
// BoundaryError that names the check, in the message `abox run` prints.
func TestCheckBoundary(t *testing.T) {
	f := newFixture(t, baseManifest)
	spec := f.spec()
	p := &project.Project{Workspace: f.ws, Manifest: spec.Manifest, Raw: []byte(f.manifest), Config: f.cfg, Paths: f.paths, State: f.project}
	h := Host{Home: "/home/u", Now: func() time.Time { return fixedNow }, Spec: func(*project.Project) (render.Spec, error) { return spec, nil }}
	if err := CheckBoundary(context.Background(), p, h); err != nil {
		t.Fatalf("CheckBoundary of a project that is up = %v", err)
	}
	if err := os.Chmod(filepath.Join(f.project.Artifacts(), "agent"), 0o777); err != nil {
		t.Fatal(err)
	}
	err := CheckBoundary(context.Background(), p, h)
	var be *BoundaryError
	if !errors.As(err, &be) || len(be.Failed) != 1 || be.Failed[0].ID != "boundary.artifacts-private" {
		t.Fatalf("CheckBoundary = %v, want a BoundaryError naming boundary.artifacts-private", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "refusing bypassPermissions: 1 boundary check failed:\nboundary.artifacts-private: ") {
		t.Errorf("message = %q", msg)
	}
}

// TestBoundaryErrorText: the count is spelled for one and for several, and every detail is
// escaped (a check may quote a file name the agent chose).
func TestBoundaryErrorText(t *testing.T) {
	e := &BoundaryError{Failed: []Result{
		{ID: "boundary.a", Finding: Finding{Detail: "x\x1b[2Jy"}},
		{ID: "boundary.b", Finding: Finding{Detail: "z"}},
	}}
	msg := e.Error()
	if !strings.HasPrefix(msg, "refusing bypassPermissions: 2 boundary checks failed:\nboundary.a: ") || !strings.HasSuffix(msg, "\nboundary.b: z") {
		t.Errorf("message = %q", msg)
	}
	if strings.Contains(msg, "\x1b") {
		t.Errorf("message %q holds a raw escape", msg)
	}
}
