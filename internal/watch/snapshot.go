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
}

// Take snapshots what s covers. It never fails and never blocks: what cannot be read is
// fingerprinted as such ("unreadable: …"), so it shows as a change, and every read is bounded.
// The git state is taken first, so that the watched files cannot use up the hash budget
// ([MaxHashTotal]) before the hooks get theirs.
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
	nestedRepos(fp, snap.Git, s.Home)
	snap.Files, snap.Capped = files(fp, s.Patterns, s.Masked)
	return snap
}

// Areas of an [ExecChange].
const (
	AreaGit  = "git"  // a dangerous git key, a hook, an included or unreadable config file
	AreaFile = "file" // a watched file
	AreaCap  = "cap"  // a watch pattern that hit a bound ([Capped]) it had not hit before
)

// ExecChange is one difference between two snapshots, as a run or doctor reports it.
type ExecChange struct {
	Area   string `json:"area"`
	Name   string `json:"name"`   // the file's workspace path, the git key, or the capped pattern
	Change string `json:"change"` // added, changed, removed; capped for AreaCap
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"` // for AreaCap, the bound that was hit
}

// Compare lists what differs from before to after: the git state, then the watched files, each
// sorted by name, then every pattern that hit a bound after but not before. A pattern capped in
// both is not a change; [Snapshot.Capped] still names it, and the caller reports it.
func Compare(before, after Snapshot) []ExecChange {
	out := append(DiffGit(before.Git, after.Git), DiffFiles(before.Files, after.Files)...)
	return append(out, NewCaps(before.Capped, after.Capped)...)
}

// DiffGit lists the differences between two git states.
func DiffGit(old, new map[string]string) []ExecChange { return changes(AreaGit, old, new) }

// DiffFiles lists the differences between two fingerprints of watched files.
func DiffFiles(old, new map[string]string) []ExecChange { return changes(AreaFile, old, new) }

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

// String is the change in words, for a person: "changed Makefile (now a FIFO)", "added
// core.fsmonitor = ./x.sh", "capped .claude/: more than 500 entries". Names and targets are the
// agent's text: print the result escaped.
func (c ExecChange) String() string {
	if c.Area == AreaCap {
		return fmt.Sprintf("capped %s: %s; what lies beyond was not compared", c.Name, c.New)
	}
	return c.Change + " " + c.Text()
}

// Text is [ExecChange.String] without the kind of change: the name and what it is now.
func (c ExecChange) Text() string {
	switch c.Area {
	case AreaCap:
		return c.Name + " (" + c.New + ")"
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

// Summarize describes at most n changes in one line, grouped by kind: "changed: a (now a
// FIFO), b; added: c; and 2 more".
func Summarize(cs []ExecChange, n int) string {
	groups := map[string][]string{}
	for i, c := range cs {
		if i == n {
			break
		}
		groups[c.Change] = append(groups[c.Change], c.Text())
	}
	var parts []string
	for _, k := range []string{"changed", "added", "removed", "capped"} {
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
