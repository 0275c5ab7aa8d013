package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTakeReadsRepositoriesInsideTheWorkspace(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{
		".git/config":                    "[core]\n\tbare = false\n",
		"sub/.git/HEAD":                  "ref: refs/heads/main\n",
		"sub/.git/config":                "[core]\n\tfsmonitor = /workspace/evil.sh\n",
		"a/b/deep/.git/config":           "[alias]\n\tx = !sh evil\n",
		"a/b/deep/.git/hooks/pre-commit": "#!/bin/sh\n",
		"linked/.git":                    "->../sub/.git",
	})
	snap := Take(Scope{Workspace: ws})
	for _, k := range []string{"key:sub/.git:core.fsmonitor", "key:a/b/deep/.git:alias.x", "hook:a/b/deep/.git:pre-commit"} {
		if _, ok := snap.Git[k]; !ok {
			t.Errorf("Take lacks %s: %v", k, snap.Git)
		}
	}
	if e := snap.Git[gitErrorPrefix+filepath.Join(ws, "linked/.git")]; !strings.Contains(e, "symlink") {
		t.Errorf("a .git that is a symlink: %q, want it named", e)
	}
	if _, ok := snap.Git["key:core.fsmonitor"]; ok {
		t.Error("a nested repository's key was taken for the workspace's own")
	}
}

func TestNestedReposBoundSays(t *testing.T) {
	ws := t.TempDir()
	deep := filepath.Join(ws, strings.Repeat("d/", MaxDepth+2))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	snap := Take(Scope{Workspace: ws})
	if e := snap.Git[gitErrorPrefix+"nested repositories"]; !strings.Contains(e, "deeper than") {
		t.Errorf("a tree deeper than the walk goes: %q, want the bound named", e)
	}
}
