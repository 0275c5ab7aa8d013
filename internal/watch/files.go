package watch

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// MaxPerPattern bounds the files one watch pattern may fingerprint, so that a pattern matching
// node_modules cannot stall doctor. A pattern that reaches it is reported as [Capped].
const MaxPerPattern = 500

// BuiltinPatterns are watched in every project on top of defaults.watch and mounts.watch: files
// the agent could write that run code or steer an agent elsewhere — Claude Code's hooks,
// settings and memory (which the host's Claude Code also reads), a second MCP configuration,
// direnv, a devcontainer definition (VS Code runs its initializeCommand on the host), git
// attributes that select filter drivers, and the manifest itself.
func BuiltinPatterns() []string {
	return []string{".claude/", ".mcp.json", "CLAUDE.md", ".envrc", ".devcontainer/", ".gitattributes", "agentbox.yaml"}
}

// Capped is a pattern that matched more than [MaxPerPattern] files; the rest were not read.
type Capped struct {
	Pattern string `json:"pattern"`
	Files   int    `json:"files"` // how many were fingerprinted
}

// Files fingerprints ([Fingerprint]) what patterns match in the workspace ws, keyed by
// slash-separated path relative to ws.
//
// A pattern is a relative path whose segments may hold path.Match globs ("*.code-workspace",
// ".github/workflows"); it is anchored at the workspace root, and a trailing slash makes it
// match directories only. A matched directory is walked. Symlinks are never followed, neither
// to a file nor to a directory nor as a parent segment: the link is fingerprinted by its target
// instead, so a retargeted link is a change. masked reports paths the sandbox masks; they are
// not watched, since the agent cannot write them.
func Files(ws string, patterns []string, masked func(rel string) bool) (map[string]string, []Capped) {
	out := map[string]string{}
	var capped []Capped
	seen := map[string]bool{}
	for _, p := range patterns {
		if seen[p] || !validPattern(p) {
			continue
		}
		seen[p] = true
		n := 0
		full := false
		for _, rel := range expand(ws, p) {
			if full = walkMatch(ws, rel, masked, out, &n); full {
				break
			}
		}
		if full {
			capped = append(capped, Capped{Pattern: p, Files: n})
		}
	}
	return out, capped
}

func validPattern(p string) bool {
	clean := strings.Trim(p, "/")
	if clean == "" || strings.HasPrefix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(clean, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return false
		}
		if _, err := path.Match(seg, ""); err != nil {
			return false
		}
	}
	return true
}

// expand returns the workspace-relative paths a pattern matches, segment by segment. A
// segment that is a symlink ends the expansion there: the link itself is the match, recorded by
// its target and never traversed.
func expand(ws, pattern string) []string {
	dirOnly := strings.HasSuffix(pattern, "/")
	segs := strings.Split(strings.Trim(pattern, "/"), "/")
	cur, links := []string{""}, []string{}
	for i, seg := range segs {
		last := i == len(segs)-1
		var next []string
		for _, rel := range cur {
			for _, name := range matchSegment(filepath.Join(ws, rel), seg) {
				child := path.Join(rel, name)
				st, err := os.Lstat(filepath.Join(ws, child))
				switch {
				case err != nil:
				case st.Mode()&fs.ModeSymlink != 0:
					links = append(links, child)
				case last && dirOnly && !st.IsDir():
				case last || st.IsDir():
					next = append(next, child)
				}
			}
		}
		cur = next
	}
	return dedupe(append(cur, links...))
}

// matchSegment lists the names in dir matching the glob seg (or seg itself when it has no glob
// character and exists).
func matchSegment(dir, seg string) []string {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return nil
	}
	if !strings.ContainsAny(seg, `*?[\`) {
		if _, err := os.Lstat(filepath.Join(dir, seg)); err == nil {
			return []string{seg}
		}
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if ok, _ := path.Match(seg, e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}

// walkMatch fingerprints rel, or every file under it when it is a directory, into out. It
// returns true when the pattern's budget n reached [MaxPerPattern].
func walkMatch(ws, rel string, masked func(string) bool, out map[string]string, n *int) bool {
	root := filepath.Join(ws, filepath.FromSlash(rel))
	full := false
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		r, _ := filepath.Rel(ws, p)
		r = filepath.ToSlash(r)
		if masked != nil && masked(r) {
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if err != nil {
			out[r] = "unreadable: " + errText(err)
			return nil
		}
		if d.IsDir() {
			return nil // WalkDir never descends through a symlink
		}
		if *n >= MaxPerPattern {
			full = true
			return filepath.SkipAll
		}
		*n++
		out[r] = Fingerprint(p)
		return nil
	})
	return full
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
