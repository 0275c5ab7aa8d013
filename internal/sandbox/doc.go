// Package sandbox runs one sandbox: netd first, its policy verified from outside, then the
// agent in netd's network namespace, and a teardown that always happens.
//
// The order is the security argument. netd is started from runspec.json (the audited argv), the
// ruleset it loaded is read back and compared with the expected one, and only then is the agent
// started — no verified policy, no agent. The agent is never exec'd into and nothing in its
// container runs as root. Teardown runs on success, failure, timeout, Ctrl-C and netd's death:
// netd's logs are harvested from netd (never from the agent), the run is recorded, and both
// containers are removed unless --keep.
//
// # Masks
//
// A mask shadows a workspace path with a read-only empty file or directory, so the agent can
// neither read nor change it. Masks fail closed and follow their content.
//
// Fail closed. Before anything starts, [FindMasks] walks the whole workspace: every entry is
// looked at with fstatat relative to its open parent, nothing is followed, only directories
// are opened. When the walk cannot see everything — more entries than limits.mask_walk, an
// unreadable directory, a tree deeper than [MaxMaskDepth], more masks than [MaxMasks] — the run
// is refused ([ErrBoundary], exit 3) with a [*MaskError] naming the cause and the fix: what the
// walk did not see, it cannot mask.
//
// Follow content. The agent cannot read masked content, but it can rename a directory that
// holds some: the mount moves along, and the next run's patterns no longer match. So each run
// records, in masked.json in the project's state directory (written atomically, never in the
// workspace), the identity (inode, and whether it is on the workspace root's filesystem) of
// every masked path. The next walk masks every entry holding recorded content, wherever it is
// and whatever it is called now, so a moved file, a moved parent and a renamed directory stay
// masked. A hard link shares its file's inode: every link of a masked file, and of a file in a
// masked directory, is masked too, and a masked file with more links than the walk found is
// refused by name — its other links are outside the workspace, where abox cannot show that the
// agent has no way to them (a context mount, another project's workspace). A symlink a pattern
// matches (.env → config/app.env) is not masked itself, but what it leads to in the workspace
// is, under its own name. Content recorded
// but not found again is dropped from the record: the walk saw the whole workspace, so that
// content is not in it, and the agent cannot have carried it out — every rename or link stays
// on the workspace's own mount, and copying would mean reading it. Content of a pattern the
// user removed from the masks is no longer followed. An inode reused by a new file after a
// masked one was deleted is masked once too many, never once too few; the summary names each
// path masked for its content, not for its name.
//
// One sandbox at a time. Another sandbox's agent could move masked content between this
// sandbox's walk and its mounts. Every sandbox holds the project's live.lock until its teardown
// is done; one whose workspace holds masked paths holds it alone, so it starts only when no
// other sandbox of the project is live, and none starts while it is. (An agent container that
// outlived its abox process, killed outright, is not covered: the lock went with the process.)
//
// Check at teardown. Once the agent's container is gone (no agent process is left), every
// mask's path is looked at again, component by component, following no link. Content that
// moved is found with the next run's walk and reported. Anything else at a mask's path — what
// the agent built after moving the original away, such as a .git rebuilt with a hooks
// directory of its own — and a link or file put in place of one of the path's directories is
// planted: it is moved out of the workspace into the run's quarantine directory (renamed, or
// copied as data without execute bits and removed when the state directory is on another
// filesystem; nothing in it is opened for execution) and reported as a failure. A literal mask
// path such as .git/hooks that did not exist at start is watched the same way: whatever
// appears there during the run is planted. The original is not put back: the agent shaped the
// tree it would go into, it stays masked where it is, and the user decides; the report says
// where it is. The summary, `abox logs --runs` and the run record name each event, `abox run`
// fails, and doctor's workspace.masks-intact fails until the quarantine is removed.
package sandbox
