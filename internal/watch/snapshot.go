package watch

import (
	"errors"
	"fmt"
	"strings"
)

// Scope is what a snapshot looks at.
type Scope struct {
	Workspace string
	Home      string   // expands ~/ in git include paths
	Patterns  []string // the watch patterns, as [Files] takes them
	// Masked reports the workspace-relative paths the sandbox masks, which the agent cannot
	// write and which are therefore not watched; nil masks nothing.
	Masked func(rel string) bool
}

// Snapshot is the execution-adjacent state of a workspace at one moment: the git state
// ([GitState]) and the watched files ([Files]). `abox up` records one as the baseline, every
// run takes one before its agent starts and one after its containers are gone, and doctor
// takes one to compare with the baseline; all of them with [Take].
type Snapshot struct {
	Repo   bool              `json:"repo"` // the workspace has a .git
	Git    map[string]string `json:"git"`
	Files  map[string]string `json:"files"`
	Capped []Capped          `json:"capped,omitempty"`
	// Hidden is what the catalog does not know at the root, at the top of every workspace
	// package and in every directory between ([found.placeHidden]): the directories whose name
	// starts with a dot that the catalog names nothing in (".foo/", "web/.foo/"), the entries
	// of a hidden directory it knows for something else that no entry names
	// (".github/ISSUE_TEMPLATE/"), and the hidden files no entry names (".toolconf"), sorted; a
	// directory ends in "/". No catalog is complete: one that appears is reported
	// ([NewHidden]).
	Hidden []string `json:"hidden,omitempty"`
	// GitCapped are the bounds the reading of git hit ([fingerprinter.gitBound]): the walk for
	// nested repositories, a hooks directory, an index or packed-refs too large. The git state
	// names each under an error key as well, which shows as a change when it is new; these are
	// said every time, as a capped watch pattern is.
	GitCapped []Capped `json:"git_capped,omitempty"`
	// Tips are HEAD and the tips of the branches of the workspace's repository (HEAD →
	// "ref: refs/heads/main", refs/heads/main → its commit). A commit on the user's branch is
	// what their next push sends, and CI runs what it holds, whatever the work tree shows.
	// A run compares them; doctor does not, as the user commits too.
	Tips map[string]string `json:"tips,omitempty"`
}

// Take snapshots what s covers: the git state, the files of the user's patterns, and what the
// [Catalog] names at the root, in every workspace package and in every virtualenv the search
// finds, with the hidden directories it does not know. It never fails and never blocks: what
// cannot be read is fingerprinted as such ("unreadable: …"), so it shows as a change, and
// every read is bounded. The git state is taken first, so that the watched files cannot use up
// the hash budget ([MaxHashTotal]) before the hooks get theirs.
func Take(s Scope) Snapshot {
	fp := newFingerprinter(s.Workspace)
	defer fp.close()
	snap := Snapshot{Git: map[string]string{}}
	st, err := gitState(fp, s.Home)
	switch {
	case errors.Is(err, ErrNotRepo):
	case err != nil:
		snap.Repo = true
		snap.Git[gitErrorPrefix+".git"] = err.Error()
	default:
		snap.Repo, snap.Git = true, st
	}
	var gitlinks []string
	if snap.Repo {
		gitlinks, snap.Tips = ownRepo(fp, snap.Git)
	}
	nestedRepos(fp, snap.Git, s.Home, gitlinks)
	snap.Files, snap.Capped = files(fp, s.Patterns, s.Masked)
	found := search(s.Workspace)
	snap.Capped = append(snap.Capped, catalogFiles(fp, found.matches, s.Patterns, s.Masked, snap.Files)...)
	snap.Capped = append(snap.Capped, watchPthImports(fp, snap.Files, s.Masked)...)
	snap.Capped = append(snap.Capped, found.capped()...)
	snap.Hidden = dedupe(found.hidden)
	snap.GitCapped = fp.gitCapped
	return snap
}

// ownRepo reads what the workspace's own repository holds beside its config and hooks: the
// flagged entries of its index, kept in st, with its gitlinks ([indexState]), and its tips.
func ownRepo(fp *fingerprinter, st map[string]string) (gitlinks []string, tipsOf map[string]string) {
	gitDir, common, _, err := findGitDir(fp, map[string]string{}, fp.ws)
	if err != nil {
		return nil, nil
	}
	return indexState(fp, st, gitDir), tips(fp, gitDir, common)
}

// Areas of an [ExecChange].
const (
	AreaGit    = "git"    // a dangerous git key, a hook, an included or unreadable config file
	AreaFile   = "file"   // a watched file
	AreaCap    = "cap"    // a watch pattern that hit a bound ([Capped]) it had not hit before
	AreaHidden = "hidden" // a hidden directory or file the catalog does not know that appeared ([NewHidden])
	AreaTip    = "tip"    // HEAD or a branch of the workspace's repository that moved ([DiffTips])
)

// ExecChange is one difference between two snapshots, as a run or doctor reports it.
type ExecChange struct {
	Area   string `json:"area"`
	Name   string `json:"name"`   // the file's workspace path, the git key, or the capped pattern
	Change string `json:"change"` // added, changed, removed; capped for AreaCap
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"` // for AreaCap, the bound that was hit
	// Tool and When say, for a file of the [Catalog], what runs it and when ([Lookup]).
	Tool string `json:"tool,omitempty"`
	When string `json:"when,omitempty"`
}

// Compare lists what differs from before to after: the git state, then the watched files, each
// sorted by name, then every pattern that hit a bound after but not before, then the hidden
// directories that appeared. A pattern capped in both is not a change; [Snapshot.Capped] still
// names it, and the caller reports it.
func Compare(before, after Snapshot) []ExecChange {
	out := append(DiffGit(before.Git, after.Git), DiffTips(before.Tips, after.Tips)...)
	out = append(out, DiffFiles(before.Files, after.Files)...)
	out = append(out, NewCaps(before.Capped, after.Capped)...)
	return append(out, NewHidden(before.Hidden, after.Hidden)...)
}

// DiffTips lists the branches of the workspace's repository that moved, appeared or went, and
// HEAD if it did: "moved refs/heads/main: 1a2b3c4d5e6f → 7a8b9c0d1e2f".
func DiffTips(old, new map[string]string) []ExecChange {
	out := changes(AreaTip, old, new)
	for i := range out {
		if out[i].Change == "changed" {
			out[i].Change = "moved"
		}
	}
	return out
}

// DiffGit lists the differences between two git states.
func DiffGit(old, new map[string]string) []ExecChange { return changes(AreaGit, old, new) }

// DiffFiles lists the differences between two fingerprints of watched files, each file of the
// catalog with what runs it.
func DiffFiles(old, new map[string]string) []ExecChange {
	out := changes(AreaFile, old, new)
	for i, c := range out {
		if e, ok := Lookup(c.Name, nil); ok {
			out[i].Tool, out[i].When = e.Tool, e.When
		}
	}
	return out
}

// NewHidden lists the hidden directories and files of after that before did not have. One that
// went away is no change: what is gone runs nothing.
func NewHidden(before, after []string) []ExecChange {
	was := map[string]bool{}
	for _, h := range before {
		was[h] = true
	}
	var out []ExecChange
	for _, h := range after {
		if !was[h] {
			out = append(out, ExecChange{Area: AreaHidden, Name: h, Change: "new"})
		}
	}
	return out
}

// NewCaps lists the patterns capped in after that were not capped, or not for that reason, in
// before.
func NewCaps(before, after []Capped) []ExecChange {
	was := map[string]string{}
	for _, c := range before {
		was[c.Pattern] = c.Reason
	}
	var out []ExecChange
	for _, c := range after {
		if r, ok := was[c.Pattern]; !ok || r != c.Reason {
			out = append(out, ExecChange{Area: AreaCap, Name: c.Pattern, Change: "capped", New: c.Reason})
		}
	}
	return out
}

func changes(area string, old, new map[string]string) []ExecChange {
	var out []ExecChange
	for _, c := range Diff(old, new) {
		out = append(out, ExecChange{Area: area, Name: c.Name, Change: c.Kind(), Old: c.Old, New: c.New})
	}
	return out
}

// String is the change in words, for a person: "changed Makefile (now a FIFO) — make", "added
// core.fsmonitor = ./x.sh", "capped .claude/: more than 500 entries", "new hidden directory:
// .foo/", "new hidden file: .bar". A file of the catalog is followed by the tool that runs it.
// Names and targets are the agent's text: print the result escaped.
func (c ExecChange) String() string {
	switch {
	case c.Area == AreaCap:
		return fmt.Sprintf("capped %s: %s; what lies beyond was not compared", c.Name, c.New)
	case c.Area == AreaHidden:
		return c.label() + ": " + c.Name
	case c.Tool != "" && c.New != "":
		return c.Change + " " + c.Text() + " — " + c.Tool
	}
	return c.Change + " " + c.Text()
}

// Text is [ExecChange.String] without the kind of change: the name and what it is now.
func (c ExecChange) Text() string {
	switch c.Area {
	case AreaCap:
		return c.Name + " (" + c.New + ")"
	case AreaHidden:
		return c.Name
	case AreaTip:
		switch {
		case c.Old != "" && c.New != "":
			return c.Name + ": " + short(c.Old) + " → " + short(c.New)
		case c.New != "":
			return c.Name + " at " + short(c.New)
		}
		return c.Name
	case AreaGit:
		name := DescribeGitKey(c.Name)
		if c.New != "" && strings.HasPrefix(c.Name, gitKeyPrefix) {
			return name + " = " + strings.ReplaceAll(c.New, "\n", " | ")
		}
		return name + c.what()
	}
	return c.Name + c.what()
}

// what says what a file became, when it is not simply a regular file with other content.
func (c ExecChange) what() string {
	now, was := Describe(c.New), Describe(c.Old)
	switch {
	case c.New == "":
		return ""
	case c.Old == "" && now != "":
		return " (" + now + ")"
	case c.Old == "":
		return ""
	case now != "":
		return " (now " + now + ")"
	case was != "":
		return " (now a regular file)"
	}
	return ""
}

// label is the kind of change as a summary groups it: the change, or for what the catalog does
// not know, "new hidden directory" or "new hidden file".
func (c ExecChange) label() string {
	switch {
	case c.Area != AreaHidden:
		return c.Change
	case strings.HasSuffix(c.Name, "/"):
		return "new hidden directory"
	}
	return "new hidden file"
}

// Summarize describes at most n changes in one line, grouped by kind: "changed: a (now a
// FIFO), b; added: c; and 2 more".
func Summarize(cs []ExecChange, n int) string {
	groups := map[string][]string{}
	for i, c := range cs {
		if i == n {
			break
		}
		groups[c.label()] = append(groups[c.label()], c.Text())
	}
	var parts []string
	for _, k := range []string{"changed", "added", "removed", "moved", "capped", "new hidden directory", "new hidden file"} {
		if len(groups[k]) > 0 {
			parts = append(parts, k+": "+strings.Join(groups[k], ", "))
		}
	}
	s := strings.Join(parts, "; ")
	if len(cs) > n {
		s += fmt.Sprintf("; and %d more", len(cs)-n)
	}
	return s
}

// short is an object name cut to 12 digits, or a ref as it is.
func short(v string) string {
	if len(v) > 12 && !strings.Contains(v, " ") {
		return v[:12]
	}
	return v
}
