package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/watch"
)

func TestExecReportWriteText(t *testing.T) {
	var cs []watch.ExecChange
	for i := 0; i < MaxExecLines+2; i++ {
		cs = append(cs, watch.ExecChange{Area: watch.AreaFile, Name: fmt.Sprintf(".claude/f%02d", i), Change: "added", New: "sha256:1"})
	}
	cs[0] = watch.ExecChange{Area: watch.AreaFile, Name: ".github/workflows/ci.yml", Change: "added", New: "symlink:/etc/shadow"}
	var b bytes.Buffer
	(&ExecReport{Changes: cs, Capped: []watch.Capped{{Pattern: ".claude/", Reason: "more than 500 entries"}}}).WriteText(&b, "fail", 4)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []string{
		"  execution-adjacent changes: 22 — these run outside the sandbox (CI, make, an editor, git, the host's Claude Code)",
		"    added .github/workflows/ci.yml (a symlink → /etc/shadow)",
		"    added .claude/f01",
	}
	if diff := cmp.Diff(want, lines[:3]); diff != "" {
		t.Errorf("ExecReport.WriteText head (-want +got):\n%s", diff)
	}
	tail := []string{
		"    and 2 more (`abox logs --runs --json` lists them all)",
		"  ↳ review them; `abox doctor` reports them until `abox doctor --accept-watch` (files) or `--accept-git` (git) accepts them",
		"  ↳ run.on_exec_change is fail: abox exits 4",
		"  watch capped: .claude/: more than 500 entries; what lies beyond was not compared",
	}
	if diff := cmp.Diff(tail, lines[len(lines)-4:]); diff != "" {
		t.Errorf("ExecReport.WriteText tail (-want +got):\n%s", diff)
	}
	b.Reset()
	(&ExecReport{Changes: []watch.ExecChange{}}).WriteText(&b, "fail", 4)
	if b.Len() != 0 {
		t.Errorf("a run that changed nothing printed %q", b.String())
	}
}

// TestExecReportWriteTextWarnsAndEscapes: under warn the summary says nothing of an exit
// status; a file name the agent chose is escaped; an unwatched run prints nothing.
func TestExecReportWriteTextWarnsAndEscapes(t *testing.T) {
	var b bytes.Buffer
	x := &ExecReport{Changes: []watch.ExecChange{{Area: watch.AreaFile, Name: "a\x1b[2J\n  forged", Change: "added", New: "fifo"}}}
	x.WriteText(&b, "warn", 4)
	if strings.Contains(b.String(), "abox exits") || strings.Count(b.String(), "\n") != 3 {
		t.Errorf("warn printed:\n%s", b.String())
	}
	if !strings.Contains(b.String(), `a\x1b[2J\n  forged`) || strings.ContainsRune(b.String(), '\x1b') {
		t.Errorf("the name is not escaped:\n%q", b.String())
	}
	b.Reset()
	(*ExecReport)(nil).WriteText(&b, "fail", 4)
	if b.Len() != 0 {
		t.Errorf("an unwatched run printed %q", b.String())
	}
}

func TestExecReportFails(t *testing.T) {
	changed := &ExecReport{Changes: []watch.ExecChange{{Area: watch.AreaFile, Name: "Makefile", Change: "changed"}}}
	for _, tc := range []struct {
		name   string
		x      *ExecReport
		policy string
		want   bool
	}{
		{"unwatched", nil, "fail", false},
		{"nothing changed", &ExecReport{Changes: []watch.ExecChange{}}, "fail", false},
		{"changed, warn", changed, "warn", false},
		{"changed, fail", changed, "fail", true},
		// red team 4: a bound hit before and after the run alike is no change, and hides one
		{"capped, fail", &ExecReport{Changes: []watch.ExecChange{}, Capped: []watch.Capped{{Pattern: ".claude/", Reason: "more than 500 entries"}}}, "fail", true},
		{"git capped, fail", &ExecReport{Changes: []watch.ExecChange{}, GitCapped: []watch.Capped{{Pattern: "nested repositories", Reason: "more than 200 repositories"}}}, "fail", true},
		{"capped, warn", &ExecReport{Changes: []watch.ExecChange{}, Capped: []watch.Capped{{Pattern: ".claude/", Reason: "x"}}}, "warn", false},
	} {
		if got := tc.x.Fails(tc.policy); got != tc.want {
			t.Errorf("%s: Fails = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRecordedWriteText: the first recording says how many files and which git settings and
// hooks it took, up to MaxExecLines of them and a count of the rest; a recording that took
// nothing says nothing.
func TestRecordedWriteText(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "Makefile"), []byte("all:\n"), 0o644)
	hooks := filepath.Join(ws, ".git", "hooks")
	os.MkdirAll(hooks, 0o755)
	os.WriteFile(filepath.Join(ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
	for i := range MaxExecLines + 5 {
		os.WriteFile(filepath.Join(hooks, fmt.Sprintf("h%02d", i)), []byte("x"), 0o755)
	}
	proj := paths.Project{Workspace: ws, Dir: t.TempDir()}
	rs := &render.RunSpec{Watch: []string{"Makefile"}}
	rec, err := RecordBaseline(proj, "", rs, "2026-11-29T10:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rec.WriteText(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []string{
		"baseline recorded: 1 execution-adjacent file(s)",
		"baseline recorded: git, 1 key(s) that run code or redirect credentials, 25 hook(s)",
		"  core.fsmonitor = evil",
		"  hook h00",
	}
	if len(lines) != 2+MaxExecLines+1 {
		t.Fatalf("%d lines, want the two counts, %d settings and the rest:\n%s", len(lines), MaxExecLines, b.String())
	}
	if diff := cmp.Diff(want, lines[:4]); diff != "" {
		t.Errorf("Recorded.WriteText head (-want +got):\n%s", diff)
	}
	if last := lines[len(lines)-1]; last != "  and 6 more" {
		t.Errorf("last line %q, want the count of the rest", last)
	}
	b.Reset()
	Recorded{Snapshot: rec.Snapshot}.WriteText(&b)
	if b.Len() != 0 {
		t.Errorf("a recording that took nothing printed %q", b.String())
	}
	b.Reset()
	Recorded{Files: true, Snapshot: watch.Snapshot{Capped: []watch.Capped{{Pattern: ".claude/", Reason: "more than 500 entries"}}}}.WriteText(&b)
	if want := "baseline recorded: 0 execution-adjacent file(s); capped: .claude/ (more than 500 entries)\n"; b.String() != want {
		t.Errorf("capped recording printed %q, want %q", b.String(), want)
	}
}

// TestExecReportWriteTextNamesHiddenDirectories: a hidden directory the catalog does not know
// that appeared in the run is a line of its own, escaped like a file name; a catalog file names
// its tool.
func TestExecReportWriteTextNamesHiddenDirectories(t *testing.T) {
	var b bytes.Buffer
	x := &ExecReport{Changes: []watch.ExecChange{
		{Area: watch.AreaFile, Name: ".cargo/config.toml", Change: "added", New: "sha256:1", Tool: "cargo"},
		{Area: watch.AreaHidden, Name: ".fo\x1bo/", Change: "new"},
	}}
	x.WriteText(&b, "warn", 4)
	for _, want := range []string{"    added .cargo/config.toml — cargo\n", "    new hidden directory: .fo\\x1bo/\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteText lacks %q:\n%s", want, b.String())
		}
	}
}

// TestExecReportWriteTextSaysCapsEveryRun: a run whose snapshot after it hit bounds says so,
// watch patterns and the reading of git alike, even when nothing changed, and under fail says
// that it exits for them.
func TestExecReportWriteTextSaysCapsEveryRun(t *testing.T) {
	x := &ExecReport{Changes: []watch.ExecChange{}, Capped: []watch.Capped{{Pattern: ".claude/", Reason: "more than 500 entries"}},
		GitCapped: []watch.Capped{{Pattern: "nested repositories", Reason: "more than 200 repositories; the rest of the workspace was not searched"}}}
	var b strings.Builder
	x.WriteText(&b, "fail", 4)
	for _, want := range []string{"  watch capped: .claude/: more than 500 entries; what lies beyond was not compared\n",
		"  git reading capped: nested repositories: more than 200 repositories; the rest of the workspace was not searched\n",
		"run.on_exec_change is fail and what lies past a cap was not compared: abox exits 4"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
}
