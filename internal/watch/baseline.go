package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/aboxhq/abox/internal/statefs"
)

// Baseline is the project's baselines.json: the git and watch fingerprints accepted last, each
// with the time it was recorded. `abox up` records both when they are missing, before any agent
// can have run; after that only an explicit accept (`abox doctor --accept-git`,
// `--accept-watch`) changes a section. It lives in abox's state directory, out of the agent's
// reach, and is written atomically with mode 0600. The two sections are updated independently
// and never clobber each other. A section was recorded when its timestamp is set; its map may be
// empty.
//
// The git section also records the [GitReading] it was taken with. An abox that reads more of
// git than the one that recorded it — more keys, repositories recognised by their layout — sees
// the workspace's settings it did not read before as added. It cannot tell them from what an
// agent added since, under the older reading, which is exactly what the newer one was made to
// see, so it accepts none of them itself: [Baseline.OlderGitReading] lets doctor say why they
// appear, and the user accepts them once with `abox doctor --accept-git`. A baseline from
// before the field (0) is reading 1.
//
// The watch section records its [WatchReading] the same way: an abox whose [Catalog] names more
// than the one that recorded it sees what the older one did not watch as added, and the hidden
// directories it did not list as new; [Baseline.OlderWatchReading] lets doctor say so, and only
// `abox doctor --accept-watch` takes them in.
type Baseline struct {
	Git        map[string]string `json:"git,omitempty"`
	GitTS      string            `json:"git_ts,omitempty"`
	GitReading int               `json:"git_reading,omitempty"`
	Watch      map[string]string `json:"watch,omitempty"`
	WatchTS    string            `json:"watch_ts,omitempty"`
	// WatchCapped are the watch patterns that hit a bound when the watch section was recorded.
	WatchCapped []Capped `json:"watch_capped,omitempty"`
	// WatchHidden are the hidden directories the catalog does not know ([Snapshot.Hidden]).
	WatchHidden  []string `json:"watch_hidden,omitempty"`
	WatchReading int      `json:"watch_reading,omitempty"`
}

// Recorded reports whether both sections were recorded: a project without them does not start
// an agent.
func (b *Baseline) Recorded() bool { return b.GitTS != "" && b.WatchTS != "" }

// GitReading numbers what [GitState] and [Take] read of git: 1 until issue 34, 2 since
// (repositories recognised by their layout, linked worktrees' config, core.worktree, remotes
// that run something on this machine, legacy remote files, and the rest of git-config(1)'s keys
// that run a program or redirect where git reads or writes), 3 since git's own paths are walked
// as the kernel walks them (hooks behind a link listed, the links followed recorded, includes
// keyed by where they really are), 4 since red team 4 (keys of git-archive(1), git-svn(1) and
// git-lfs-config(5), status.showUntrackedFiles and http's TLS keys; replace refs, grafts and
// alternates; the index's skip-worktree and assume-unchanged entries; the repositories of its
// gitlinks wherever they are, and more of them). Raise it whenever the git state of an
// unchanged workspace can grow.
const GitReading = 4

// SetGit records snap's git state as the git section, at ts, with the reading it was taken with.
func (b *Baseline) SetGit(snap Snapshot, ts string) {
	b.Git, b.GitTS, b.GitReading = snap.Git, ts, GitReading
}

// OlderGitReading reports whether the git section was recorded by an abox that read less of git
// than this one ([GitReading]): what it did not read shows as added.
func (b *Baseline) OlderGitReading() bool { return b.GitTS != "" && max(b.GitReading, 1) < GitReading }

// WatchReading numbers what [Take] watches of the files: 1 until issue 34 (a list of names at
// the workspace root), 2 since (the [Catalog], at the top of every workspace package and in
// every virtualenv, and the hidden directories it does not know), 3 since red team 4 (more
// tools' files, the directories between the root and a package, the hidden files and the
// entries of known hidden directories the catalog does not know, what a watched link to a
// directory leads to, the modules a virtualenv's .pth files import). Raise it whenever the
// watched files of an unchanged workspace can grow.
const WatchReading = 3

// SetWatch records snap's watched files, caps and hidden directories as the watch section, at
// ts, with the reading it was taken with.
func (b *Baseline) SetWatch(snap Snapshot, ts string) {
	b.Watch, b.WatchCapped, b.WatchHidden, b.WatchTS, b.WatchReading = snap.Files, snap.Capped, snap.Hidden, ts, WatchReading
}

// OlderWatchReading reports whether the watch section was recorded by an abox that watched
// less than this one ([WatchReading]): what it did not watch shows as added.
func (b *Baseline) OlderWatchReading() bool {
	return b.WatchTS != "" && max(b.WatchReading, 1) < WatchReading
}

// LoadBaseline reads the baseline at path. A missing file is an empty baseline.
func LoadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Baseline{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading baselines: %w", err)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	return &b, nil
}

// UpdateBaseline reads the baseline at path, lets edit change it, and writes it back. A corrupt
// file is replaced.
func UpdateBaseline(path string, edit func(*Baseline)) error {
	b, err := LoadBaseline(path)
	if err != nil {
		b = &Baseline{}
	}
	edit(b)
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return statefs.WriteFile(path, append(data, '\n'), statefs.PrivateMode)
}

// Change is one difference between two fingerprints. Old is "" for something added, New is ""
// for something removed.
type Change struct {
	Name string `json:"name"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// Kind is "added", "removed" or "changed".
func (c Change) Kind() string {
	switch {
	case c.Old == "":
		return "added"
	case c.New == "":
		return "removed"
	}
	return "changed"
}

// Diff lists what differs between the fingerprints old and new, sorted by name.
func Diff(old, new map[string]string) []Change {
	var out []Change
	for k, v := range new {
		if o, ok := old[k]; !ok || o != v {
			out = append(out, Change{Name: k, Old: o, New: v})
		}
	}
	for k, v := range old {
		if _, ok := new[k]; !ok {
			out = append(out, Change{Name: k, Old: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RecordInitial records snap, at ts, as each section of the baseline at path that was never
// recorded, and leaves a recorded section alone: what `abox up` does, so that running it again
// after a run never accepts what the run changed. It reports which sections it recorded. A
// corrupt file is an error, not replaced: only an explicit accept may do that.
func RecordInitial(path string, snap Snapshot, ts string) (git, files bool, err error) {
	b, err := LoadBaseline(path)
	if err != nil {
		return false, false, err
	}
	if b.Recorded() {
		return false, false, nil
	}
	err = UpdateBaseline(path, func(b *Baseline) {
		if git = b.GitTS == ""; git {
			b.SetGit(snap, ts)
		}
		if files = b.WatchTS == ""; files {
			b.SetWatch(snap, ts)
		}
	})
	return git, files, err
}
