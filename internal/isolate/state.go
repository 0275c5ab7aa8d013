package isolate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/statefs"
)

// States of an isolated run.
const (
	Pending   = "pending"   // the clone exists; its branch is not merged
	Merged    = "merged"    // the branch was merged into the user's branch
	Discarded = "discarded" // branch and clone were removed
)

// MaxFileBytes bounds a file an isolated run may bring back without the user forcing it:
// 100 MiB, GitHub's hard limit on one file, so no file over it can be an ordinary source file
// of a project hosted there, and hashing one costs the host about a second.
const MaxFileBytes int64 = 100 << 20

// ErrNotRepository is a project that is not the top of a git repository: there is nothing to
// clone.
var ErrNotRepository = errors.New("not a git repository")

// ErrNoCommit is a repository whose HEAD names no commit yet.
var ErrNoCommit = errors.New("no commit at HEAD")

// ErrNotFound is a run id with no record.
var ErrNotFound = errors.New("no such isolated run")

// ErrFlagged is a merge refused because the branch brings a file over the bound, a symlink that
// leads out of the repository ([File.Out]), a file of a git directory or a file that replaces
// one of the user's that git ignores ([File.Ignored]); MergeOptions.Force merges it anyway.
var ErrFlagged = errors.New("merge refuses them without force")

// ErrDirty is a merge refused because the user's working tree has uncommitted changes.
var ErrDirty = errors.New("the working tree has uncommitted changes")

// Repo is one project's isolated runs.
type Repo struct {
	Project paths.Project
	Git     string           // the git program; "git" when empty
	Now     func() time.Time // time.Now when nil
	Timeout time.Duration    // of each git command; 10 minutes when zero
	// MaxFile is the size bound of [MaxFileBytes]; zero means MaxFileBytes.
	MaxFile int64
	// Watch are patterns of execution-adjacent paths on top of [ExecPatterns] (defaults.watch,
	// mounts.watch).
	Watch []string
	// Host is who git runs as in the user's repository; when nil, [WorkspaceAccount] decides.
	Host      *Account
	hostKnown bool
}

func (r *Repo) gitPath() string {
	if r.Git == "" {
		return "git"
	}
	return r.Git
}

func (r *Repo) timeout() time.Duration {
	if r.Timeout == 0 {
		return 10 * time.Minute
	}
	return r.Timeout
}

func (r *Repo) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (r *Repo) maxFile() int64 {
	if r.MaxFile == 0 {
		return MaxFileBytes
	}
	return r.MaxFile
}

// Run is the record of one isolated run, kept in the project's state beside its clone.
type Run struct {
	ID      string    `json:"id"`
	Branch  string    `json:"branch"` // abox/<id>, in the clone and, once collected, in the user's repository
	Base    string    `json:"base"`   // the user's HEAD when the clone was made
	Full    string    `json:"full"`   // the tree the clone started from before masking (Base's, or the worktree's)
	Start   string    `json:"start"`  // the clone's first commit: Base, or the start commit on it
	Masked  []string  `json:"masked,omitempty"`
	Tip     string    `json:"tip,omitempty"` // the branch in the user's repository after Collect
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	Changed time.Time `json:"changed"`
	Into    string    `json:"into,omitempty"` // the branch it was merged into
	LeftOut []Big     `json:"left_out,omitempty"`
}

// Big is a file left out of the end-of-run commit: one over the size bound, or one git cannot
// commit (a FIFO, socket or device, named by Type).
type Big struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Type string `json:"type,omitempty"`
}

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidID reports whether id can name a run: it becomes a branch name and a directory name.
func ValidID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("%q is not a run id (lower-case letters, digits and dashes, up to 63)", id)
	}
	return nil
}

// Load reads the record of run id.
func (r *Repo) Load(id string) (*Run, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(r.Project.IsolatedRun(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	var run Run
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, fmt.Errorf("reading the record of run %s: %w", id, err)
	}
	if run.ID != id {
		return nil, fmt.Errorf("the record of run %s names run %q", id, run.ID)
	}
	return &run, nil
}

// List returns every recorded run, oldest first.
func (r *Repo) List() ([]*Run, error) {
	ents, err := os.ReadDir(r.Project.Isolated())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Run
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || ValidID(id) != nil {
			continue
		}
		run, err := r.Load(id)
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	sortRuns(out)
	return out, nil
}

// Orphans lists the clones that have no record: left by an abox killed while it made one (or
// being made right now).
func (r *Repo) Orphans() ([]string, error) {
	ents, err := os.ReadDir(r.Project.Clones())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if ValidID(e.Name()) != nil {
			continue
		}
		if _, err := os.Lstat(r.Project.IsolatedRun(e.Name())); errors.Is(err, fs.ErrNotExist) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Collected reports whether run's branch was brought into the user's repository; a pending run
// that was not was cut short before its collect (abox was killed).
func (run *Run) Collected() bool { return run.Tip != "" }

func (r *Repo) save(run *Run) error {
	run.Changed = r.now().UTC()
	data, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	return statefs.WriteFile(r.Project.IsolatedRun(run.ID), append(data, '\n'), statefs.PrivateMode)
}

func (r *Repo) lock() (func(), error) { return statefs.Lock(r.Project.Lock()) }

// maskPattern is one mask pattern, matched as internal/sandbox matches masks: a pattern with a
// slash is anchored at the root and matched against the whole path, one without against the
// base name at any depth; a trailing slash matches directories only. A path below a match is
// masked too.
type maskPattern struct {
	glob     string
	anchored bool
	dirOnly  bool
}

func parseMasks(raw []string) []maskPattern {
	var out []maskPattern
	for _, r := range raw {
		g := strings.Trim(r, "/")
		if g == "" {
			continue
		}
		out = append(out, maskPattern{glob: g, anchored: strings.Contains(g, "/"), dirOnly: strings.HasSuffix(r, "/")})
	}
	return out
}

// masked reports whether the tracked file rel (slash-separated) is masked: the file itself, or
// any directory it lies in, matches a pattern.
func masked(pats []maskPattern, rel string) bool {
	segs := strings.Split(rel, "/")
	for i := range segs {
		prefix := strings.Join(segs[:i+1], "/")
		dir := i < len(segs)-1
		for _, p := range pats {
			if p.dirOnly && !dir {
				continue
			}
			subject := segs[i]
			if p.anchored {
				subject = prefix
			}
			if ok, _ := path.Match(p.glob, subject); ok {
				return true
			}
		}
	}
	return false
}
