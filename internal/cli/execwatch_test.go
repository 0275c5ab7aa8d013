package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/launch"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/watch"
)

func execFixture(t *testing.T) (*App, *project.Project, *render.RunSpec, *bytes.Buffer) {
	t.Helper()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "Makefile"), []byte("all:\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET=1\n"), 0o644)
	out := &bytes.Buffer{}
	a := &App{Out: out, Err: &bytes.Buffer{}, Env: func(string) (string, bool) { return "", false },
		Now: func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) }}
	p := &project.Project{Workspace: ws, State: paths.Project{Workspace: ws, Dir: t.TempDir()}}
	return a, p, &render.RunSpec{Watch: []string{"Makefile"}, Masks: []string{".env*"}}, out
}

// execScope is what a run of p watches, and the refusal with the hint `abox run` prints when
// there is none ([sandbox.RunScope], as [launch.Run] asks it).
func execScope(a *App, p *project.Project, rs *render.RunSpec) (*watch.Scope, error) {
	scope, err := sandbox.RunScope(p.State, a.getenv("HOME"), rs)
	return scope, remedy.Refusal(err, p.State.Runs())
}

// TestRunRefusedWithoutBaseline: a project whose baseline was never recorded, or is corrupt,
// starts no agent, and the hint names the command that records it. launch's
// TestRunRefusedWithoutBaseline shows that no container starts.
func TestRunRefusedWithoutBaseline(t *testing.T) {
	a, p, rs, _ := execFixture(t)
	_, err := execScope(a, p, rs)
	if err == nil || !strings.Contains(err.Error(), "no baseline") || !strings.Contains(hintOf(err), "`abox up`") {
		t.Errorf("execScope(no baseline) = %v (hint %q), want a refusal naming `abox up`", err, hintOf(err))
	}
	if _, err := sandbox.RecordBaseline(p.State, a.getenv("HOME"), rs, "2026-01-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	scope, err := execScope(a, p, rs)
	if err != nil || scope.Workspace != p.Workspace || !scope.Masked(".env") {
		t.Errorf("execScope(baseline) = %+v, %v", scope, err)
	}
	os.WriteFile(p.State.Baselines(), []byte("{"), 0o600)
	if _, err := execScope(a, p, rs); err == nil || !strings.Contains(hintOf(err), "--accept-git --accept-watch") {
		t.Errorf("execScope(corrupt) = %v (hint %q), want a refusal naming the accept flags", err, hintOf(err))
	}
}

func TestExecVerdict(t *testing.T) {
	changed := &sandbox.ExecReport{Changes: []watch.ExecChange{{Area: watch.AreaFile, Name: "Makefile", Change: "changed", Old: "sha256:1", New: "fifo"}}}
	tests := []struct {
		name   string
		x      *sandbox.ExecReport
		policy string
		want   int // exit status; -1 for no error
	}{
		{"unwatched", nil, "fail", -1},
		{"nothing changed", &sandbox.ExecReport{Changes: []watch.ExecChange{}}, "fail", -1},
		{"changed, warn", changed, "warn", -1},
		{"changed, fail", changed, "fail", ExitExecChange},
	}
	for _, tc := range tests {
		rep := &launch.Report{Outcome: &sandbox.Outcome{ID: "r1", Exec: tc.x}, OnExecChange: tc.policy}
		err := remedy.Verdict(rep.Verdict())
		if tc.want < 0 {
			if err != nil {
				t.Errorf("%s: verdict = %v, want nil", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: verdict = nil, want exit %d", tc.name, tc.want)
			continue
		}
		var b bytes.Buffer
		if code := report(&b, err); code != tc.want || !strings.Contains(b.String(), "run.on_exec_change is fail") || !strings.Contains(b.String(), "↳ ") {
			t.Errorf("%s: exit %d, printed %q; want %d with the error and its hint", tc.name, code, b.String(), tc.want)
		}
	}
}
