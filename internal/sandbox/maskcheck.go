package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/telemetry"
)

// maskRun is one run's masks: what was mounted at start, and how to look again at teardown.
type maskRun struct {
	set      *MaskSet
	patterns []string
	limit    int
	live     *liveLock
}

// mounts returns the run's mask mounts; [Sandbox.Run] prepares them before any argv is built.
func (r *maskRun) mounts(emptyFile, emptyDir string) []render.Mount {
	if r == nil {
		return nil
	}
	return r.set.Mounts(emptyFile, emptyDir)
}

func (r *maskRun) release() {
	if r != nil {
		r.live.unlock()
	}
}

// prepareMasks takes the project's live lock, walks the workspace and records what it found
// to mask. Any failure refuses the run before anything is started.
func (s *Sandbox) prepareMasks(o Options, out *Outcome) error {
	live, err := lockLive(s.Project.LiveLock())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBoundary, err)
	}
	set, err := s.findMasks(o, live)
	if err != nil {
		live.unlock()
		return fmt.Errorf("%w: masks: %w", ErrBoundary, err)
	}
	out.masks = &maskRun{set: set, patterns: o.Masks, limit: o.MaskWalkLimit, live: live}
	for _, m := range set.Masks {
		if m.Reason != ByPattern {
			out.note("masked %s", printable(m.String()))
		}
	}
	return nil
}

// findMasks walks the workspace under the live lock and records the result. A sandbox that
// masks something must be the project's only one: another one's agent could move masked
// content while this one's mounts are set up.
func (s *Sandbox) findMasks(o Options, live *liveLock) (*MaskSet, error) {
	rec, err := LoadMaskRecord(s.Project.MaskRecord())
	if err != nil {
		return nil, err
	}
	set, err := FindMasks(s.Project.Workspace, o.Masks, rec, o.MaskWalkLimit)
	if err != nil {
		return nil, err
	}
	if err := live.settle(len(set.Masks) > 0); err != nil {
		return nil, maskErr("wait for it to end (`abox logs --runs` lists runs), or give each agent its own checkout: a git worktree is a project of its own",
			"another sandbox of this project is live, and the workspace holds masked paths (%s): its agent could move them while this sandbox starts",
			printable(firstOf(set.Paths(), 3)))
	}
	if err := SaveMaskRecord(s.Project.MaskRecord(), set.Record()); err != nil {
		return nil, err
	}
	return set, nil
}

// checkMasks runs at teardown, once the agent's container is gone: every mask must still hold
// the content it held at start. What the agent put in a mask's place is moved out of the
// workspace into the run's quarantine; where masked content moved is found and reported. The
// run's outcome carries what happened.
func (s *Sandbox) checkMasks(out *Outcome) {
	mr := out.masks
	if mr == nil {
		return
	}
	root, err := os.Open(s.Project.Workspace)
	if err != nil {
		out.note("checking the masks after the run: %v", err)
		return
	}
	defer root.Close()
	found := inspectMasks(root, mr.set)
	if len(found) == 0 {
		return
	}
	q := &quarantine{dir: filepath.Join(out.Dir, "quarantine")}
	for i := range found {
		if found[i].plant != "" {
			q.take(root, &found[i])
		}
	}
	s.locate(mr, found, q)
	events := make([]telemetry.MaskEvent, len(found))
	for i, f := range found {
		events[i] = f.MaskEvent
	}
	if q.used || anyFailed(events) {
		if err := q.writeIndex(out.ID, events); err != nil {
			out.note("writing the quarantine index: %v", err)
		}
	}
	out.MaskEvents = events
}

// finding is one mask that did not hold, with what to move aside.
type finding struct {
	telemetry.MaskEvent
	mask  *Mask  // nil for a literal pattern that matched nothing at start
	plant string // workspace-relative path of the entry to move aside
	id    FileID // its identity when looked at
}

// inspectMasks looks at every mask's path, and at every literal pattern that matched nothing
// at start, without following links.
func inspectMasks(root *os.File, set *MaskSet) []finding {
	var out []finding
	for i := range set.Masks {
		m := &set.Masks[i]
		p := probePath(root, m.Path)
		switch {
		case p.err != nil: // what abox cannot look at may hide anything: moved aside like a plant
			out = append(out, unreadable(m.Path, telemetry.MaskPlanted, p, m))
		case p.state == probeFound && p.id == m.ID && p.dir == m.Dir:
		case p.state == probeAbsent:
			out = append(out, finding{MaskEvent: telemetry.MaskEvent{Mask: m.Path, Kind: telemetry.MaskMoved}, mask: m})
		default: // another entry at the path, or a link or file in place of one of its directories
			out = append(out, finding{MaskEvent: telemetry.MaskEvent{Mask: m.Path, Kind: telemetry.MaskPlanted, Planted: p.at, PlantedType: p.typ},
				mask: m, plant: p.at, id: p.id})
		}
	}
	for _, raw := range set.Absent {
		lit := strings.Trim(raw, "/")
		p := probePath(root, lit)
		dirOnly := strings.HasSuffix(raw, "/")
		if p.err != nil {
			out = append(out, unreadable(lit, telemetry.MaskAppeared, p, nil))
			continue
		}
		if p.state == probeFound && p.at == lit && (p.dir || !dirOnly || p.typ == "symlink") {
			out = append(out, finding{MaskEvent: telemetry.MaskEvent{Mask: lit, Kind: telemetry.MaskAppeared, Planted: lit, PlantedType: p.typ},
				plant: lit, id: p.id})
		}
	}
	return out
}

// unreadable is the finding for a mask path abox could not look at: the entry it could not
// look into is moved aside when abox could at least look at it, and reported either way.
func unreadable(path, kind string, p probe, m *Mask) finding {
	f := finding{MaskEvent: telemetry.MaskEvent{Mask: path, Kind: kind, Planted: p.at, PlantedType: p.typ,
		Problem: "abox could not look at it: " + p.err.Error()}, mask: m}
	if p.typ == "" {
		f.PlantedType = "entry abox cannot read"
		return f
	}
	f.plant, f.id = p.at, p.id
	return f
}

// locate finds where the content of moved and replaced masks is now, with a walk like the next
// run's; content that was inside what the agent planted is looked for in the quarantine.
func (s *Sandbox) locate(mr *maskRun, found []finding, q *quarantine) {
	need := false
	for _, f := range found {
		need = need || f.mask != nil
	}
	if !need {
		return
	}
	rec := mr.set.Record()
	where, err := whereIs(s.Project.Workspace, "", mr, rec)
	if q.used {
		if inQ, qerr := whereIs(q.dir, q.dir+"/", mr, rec); qerr == nil {
			for id, p := range inQ {
				where[id] = append(where[id], p...)
			}
		}
	}
	for i := range found {
		f := &found[i]
		if f.mask == nil {
			continue
		}
		if p := where[f.mask.ID]; len(p) > 0 {
			f.Original = strings.Join(p, ", ")
		} else if err != nil {
			f.Problem = join(f.Problem, "could not look where the masked content went: "+err.Error())
		}
	}
}

// whereIs walks dir for the recorded content and returns its paths by identity, each prefixed.
func whereIs(dir, prefix string, mr *maskRun, rec *MaskRecord) (map[FileID][]string, error) {
	where := map[FileID][]string{}
	now, err := FindMasks(dir, mr.patterns, rec, mr.limit)
	if err != nil {
		return where, err
	}
	for _, m := range now.Masks {
		where[m.ID] = append(where[m.ID], prefix+m.Path)
	}
	return where, nil
}

func anyFailed(events []telemetry.MaskEvent) bool {
	for _, e := range events {
		if e.Failed() {
			return true
		}
	}
	return false
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// firstOf joins at most n items.
func firstOf(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// What [probePath] found.
const (
	probeAbsent   = iota // nothing at the path
	probeFound           // an entry at the path, reached through real directories
	probeDiverted        // one of its directories is a link or not a directory
)

// probe is what is at a workspace path now.
type probe struct {
	state int
	at    string // the entry found: the path itself, or the component that diverts it
	typ   string
	id    FileID
	dir   bool
	err   error
}

// probePath looks at rel below root, component by component, following no link.
func probePath(root *os.File, rel string) probe {
	parts := strings.Split(rel, "/")
	dir := root
	for i, name := range parts {
		var st unix.Stat_t
		err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			closeUnless(dir, root)
			return probe{state: probeAbsent}
		}
		at := strings.Join(parts[:i+1], "/")
		if err != nil {
			closeUnless(dir, root)
			return probe{at: at, err: fmt.Errorf("looking at %s: %w", printable(at), err)}
		}
		p := probe{state: probeFound, at: at, typ: typeName(uint32(st.Mode)), id: FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)},
			dir: uint32(st.Mode)&unix.S_IFMT == unix.S_IFDIR}
		if i == len(parts)-1 {
			closeUnless(dir, root)
			return p
		}
		if !p.dir {
			closeUnless(dir, root)
			p.state = probeDiverted
			return p
		}
		next, err := openDirAt(dir, name, p.id)
		closeUnless(dir, root)
		if err != nil {
			p.err = fmt.Errorf("opening %s: %w", printable(at), err)
			return p
		}
		dir = next
	}
	return probe{state: probeAbsent}
}

func closeUnless(f, keep *os.File) {
	if f != keep {
		f.Close()
	}
}

// typeName names a file type for a person.
func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFREG:
		return "file"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "device"
}
