// Package artifact writes rendered artifacts to disk and checks them against artifacts.json.
//
// The authoritative copy lives in the project's state directory, outside the workspace the agent
// can write. Its subdirectories agent/ and netd/ are bind-mounted read-only into the sandbox's
// containers, so they are world-readable (0755 directories, 0444 files) and hold no secret. The
// review copy goes to the workspace's .devcontainer/, but never through a symlink: a directory
// the agent replaced with a link elsewhere is refused, not followed.
package artifact

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
)

// ErrNotRendered is returned when a project has no artifacts.json.
var ErrNotRendered = errors.New("not rendered yet")

// Write writes every artifact: authoritative ones under p.Artifacts(), review ones under the
// workspace's .devcontainer/. Files the new render does not contain are removed from the
// authoritative directory. It returns warnings (a review copy that could not be written).
func Write(p paths.Project, arts []render.Artifact) (warnings []string, err error) {
	dir := p.Artifacts()
	if err := statefs.MkdirAll(p.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	keep := map[string]bool{}
	var review []render.Artifact
	for _, a := range arts {
		if a.Review {
			review = append(review, a)
			continue
		}
		keep[a.Name] = true
		if err := writeOne(dir, a); err != nil {
			return nil, err
		}
	}
	if err := prune(dir, keep); err != nil {
		return nil, err
	}
	if err := publishDirs(dir); err != nil {
		return nil, err
	}
	if err := writeMasks(p); err != nil {
		return nil, err
	}
	if w := writeReview(filepath.Join(p.Workspace, render.ReviewDir), review); w != "" {
		warnings = append(warnings, w)
	}
	return warnings, nil
}

func writeOne(dir string, a render.Artifact) error {
	path := filepath.Join(dir, filepath.FromSlash(a.Name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	return statefs.WriteFile(path, a.Data, a.Mode)
}

// prune removes files under dir that are not in keep, and the directories left empty.
func prune(dir string, keep map[string]bool) error {
	var stale, dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if !keep[filepath.ToSlash(rel)] {
			stale = append(stale, path)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("removing stale artifact: %w", err)
		}
	}
	// Deepest first, so a directory emptied by removing its subdirectories goes too. A directory
	// that still holds an artifact is not empty, and os.Remove leaves it.
	for i := len(dirs) - 1; i >= 0; i-- {
		err := os.Remove(dirs[i])
		if err != nil && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("removing stale directory: %w", err)
		}
	}
	return nil
}

// publishDirs sets every directory under dir, dir included, to 0755: agent/ and netd/ are
// bind-mounted into containers whose users (uid 1000, netd's uid) are not the host user, so
// their modes must not depend on the umask abox runs with, nor on an older abox's choice.
func publishDirs(dir string) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o755)
	})
	if err != nil {
		return fmt.Errorf("setting the modes of %s: %w", dir, err)
	}
	return nil
}

// writeMasks creates the empty file and directory bound over masked paths.
func writeMasks(p paths.Project) error {
	dir := p.Masks()
	if err := os.MkdirAll(filepath.Join(dir, "empty.d"), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Join(dir, "empty.d"), 0o555)
	f := filepath.Join(dir, "empty")
	if st, err := os.Stat(f); err == nil && st.Size() == 0 {
		return nil
	}
	return statefs.WriteFile(f, nil, 0o444)
}

// writeReview writes the review copy, refusing a .devcontainer that is not a plain directory.
// The workspace is the agent's: it may swap the directory for a link at any moment, so the
// directory is opened once, checked to be the one inspected, and every file is written relative
// to that open directory, never through a path that is looked up again.
func writeReview(dir string, arts []render.Artifact) (warning string) {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Sprintf("the review copy was not written: %v", err)
		}
		st, err = os.Lstat(dir)
	}
	switch {
	case err != nil:
		return fmt.Sprintf("the review copy was not written: %v", err)
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Sprintf("%s is a symlink; the review copy was not written (abox never writes through links in the workspace)", dir)
	case !st.IsDir():
		return fmt.Sprintf("%s is not a directory; the review copy was not written", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Sprintf("the review copy was not written: %v", err)
	}
	defer root.Close()
	if rst, err := root.Stat("."); err != nil || !os.SameFile(st, rst) {
		return fmt.Sprintf("%s changed while abox wrote it; the review copy was not written", dir)
	}
	for _, a := range arts {
		if err := writeIn(root, a.Name, a.Data, a.Mode); err != nil {
			return fmt.Sprintf("the review copy was not fully written: %v", err)
		}
	}
	return ""
}

// writeIn atomically replaces name inside root with data and sets mode: a temporary file, then a
// rename over name, which replaces a link rather than following it.
func writeIn(root *os.Root, name string, data []byte, mode fs.FileMode) error {
	tmp := "." + name + ".tmp-" + rand.Text()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		root.Remove(tmp)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		root.Remove(tmp)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// ReadIndex reads artifacts.json of a project.
func ReadIndex(p paths.Project) (*render.Index, error) {
	data, err := os.ReadFile(filepath.Join(p.Artifacts(), render.IndexName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotRendered
	}
	if err != nil {
		return nil, fmt.Errorf("reading artifacts.json: %w", err)
	}
	var idx render.Index
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", filepath.Join(p.Artifacts(), render.IndexName), err)
	}
	return &idx, nil
}

// ReadRunSpec reads runspec.json of a project.
func ReadRunSpec(p paths.Project) (*render.RunSpec, error) {
	path := filepath.Join(p.Artifacts(), render.RunSpecFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotRendered
	}
	if err != nil {
		return nil, fmt.Errorf("reading runspec.json: %w", err)
	}
	var rs render.RunSpec
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	return &rs, nil
}

// NetdImage is the netd image the runspec.json of p names, "" when it cannot be read: a
// project's netd image is where a gateway's health probe can run, and only a hint of it.
func NetdImage(p paths.Project) string {
	rs, err := ReadRunSpec(p)
	if err != nil {
		return ""
	}
	return rs.Netd.Image
}

// Mismatch is one artifact that differs from artifacts.json.
type Mismatch struct {
	Name   string
	Reason string // "missing", "modified", "mode 0644, want 0444", "not a regular file", "unexpected"
}

// Verify compares the authoritative artifacts with artifacts.json.
func Verify(p paths.Project) ([]Mismatch, error) {
	idx, err := ReadIndex(p)
	if err != nil {
		return nil, err
	}
	var out []Mismatch
	names := make([]string, 0, len(idx.Files))
	for n := range idx.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == render.IndexName {
			continue
		}
		if m := verifyOne(p.Artifacts(), name, idx.Files[name]); m != nil {
			out = append(out, *m)
		}
	}
	extra, err := unexpected(p.Artifacts(), idx.Files)
	if err != nil {
		return nil, err
	}
	out = append(out, extra...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// unexpected lists what the artifacts directory holds beyond artifacts.json and the files it
// names: agent/ and netd/ are mounted into the containers whole, so an added file is as much a
// change to the sandbox as a modified one. Links are listed, not followed.
func unexpected(dir string, files map[string]render.IndexFile) ([]Mismatch, error) {
	var out []Mismatch
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		name := filepath.ToSlash(rel)
		if _, ok := files[name]; !ok && name != render.IndexName {
			out = append(out, Mismatch{Name: name, Reason: "unexpected"})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	return out, nil
}

func verifyOne(dir, name string, want render.IndexFile) *Mismatch {
	// A tampered index must not make Verify read, and vouch for, a file elsewhere.
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return &Mismatch{Name: name, Reason: "not a path inside the artifacts directory"}
	}
	path := filepath.Join(dir, filepath.FromSlash(name))
	st, err := os.Lstat(path)
	if err != nil {
		return &Mismatch{Name: name, Reason: "missing"}
	}
	if !st.Mode().IsRegular() {
		return &Mismatch{Name: name, Reason: "not a regular file"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return &Mismatch{Name: name, Reason: "unreadable"}
	}
	if render.SHA256(data) != want.SHA256 {
		return &Mismatch{Name: name, Reason: "modified"}
	}
	if mode := fmt.Sprintf("%04o", st.Mode().Perm()); mode != want.Mode {
		return &Mismatch{Name: name, Reason: "mode " + mode + ", want " + want.Mode}
	}
	return nil
}

// Describe joins mismatches for a message.
func Describe(ms []Mismatch) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Name + " (" + m.Reason + ")"
	}
	return strings.Join(parts, ", ")
}

// ErrNoNetdPolicy is matched (errors.Is) by the error of [ReadNetdPolicy] when netd.json cannot
// be read: the project was never rendered, or the file is gone or unreadable. Rendering again
// fixes it; a policy that does not parse is another error.
var ErrNoNetdPolicy = errors.New("no readable netd policy")

// noNetdPolicy is the file system's error, which is its text, marked as [ErrNoNetdPolicy].
type noNetdPolicy struct{ err error }

func (e noNetdPolicy) Error() string   { return e.err.Error() }
func (e noNetdPolicy) Unwrap() []error { return []error{e.err, ErrNoNetdPolicy} }

// ReadNetdPolicy reads the rendered netd policy (netd.json) in the artifacts directory dir:
// what netd enforces, so what the agent can reach and see. A file that cannot be read is an
// [ErrNoNetdPolicy] that wraps the file system's error ([fs.ErrNotExist] when it is missing);
// one that does not parse is refused, never read as an empty policy.
func ReadNetdPolicy(dir string) (*policy.Netd, error) {
	data, err := os.ReadFile(filepath.Join(dir, render.NetdDir, policy.File))
	if err != nil {
		return nil, noNetdPolicy{err}
	}
	return policy.Parse(data)
}
