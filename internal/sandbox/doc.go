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
// other sandbox of the project is live, and none starts while it is. The run's warden holds the
// lock too (see "When abox dies"): an abox killed outright does not release it while its run's
// agent may still run.
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
//
// # When abox dies
//
// The foreground abox may end at any moment; what it started must end too, within seconds, and
// be recorded. Every way it can end is covered by one of three things, none of which the agent
// can reach: they are host processes in the host's PID namespace (the agent has its own, and
// sees none of them), and what they read is in abox's state directory, which no container
// mounts.
//
//   - Signals abox can catch end the run as Ctrl-C does, with the teardown to its end: SIGINT,
//     SIGTERM and SIGQUIT (recorded as interrupted) and SIGHUP, a closed terminal or a dropped
//     ssh connection (hangup). abox takes SIGPIPE, so that a write to a standard output or
//     error nobody reads any more fails with EPIPE instead of killing it; that write ends the
//     run too (output-closed). The caller says why with an [Ended] as the cause of the
//     context's end.
//   - Every run has a warden ("The warden", [Ward]), started before its netd and holding its
//     owner lock and live.lock. abox holds the only write end of the pipe the warden reads;
//     SIGKILL, the OOM killer, a panic or a fatal runtime error close it without the line that
//     says abox is done, and the warden finishes the run at once: it kills the agent, then
//     tears down, harvests, checks the masks, compares the watched files and records the run as
//     abox-killed, or abox-crashed when abox's crash report came down the pipe
//     (runtime/debug.SetCrashOutput). An abox that stops acting without dying (SIGSTOP, a
//     suspended laptop) has its deadline kept by the warden: run.timeout is a wall-clock
//     deadline ([withWallDeadline]), which goes on while the machine sleeps, and the warden
//     kills the agent [wardenGrace] after it; abox, once it goes on, records the timeout. A
//     warden that cannot be started refuses the run: no warden, no netd. A takeover ends with a
//     sweep of every container carrying the run's label: a `docker run` of netd or a create of
//     the agent that abox had on its way (a docker command in a process group of its own, which
//     abox's death does not end) may land after the teardown looked, so the sweep goes on while
//     such a command is alive. The warden tries again for minutes while the daemon does not
//     answer, and drops the run's owner lock only once nothing of the run is left.
//   - abox and its warden killed together (`pkill -9 abox`), or the host going down, leave the
//     run's owner lock (owners/<id>.lock in the project's state directory) held by nobody.
//     doctor's sandbox.orphans names every running netd or agent of such a run, and the
//     project's next `abox run` or `abox shell` finishes and records it before its own mask
//     walk ([Reap], outcome orphaned), as `abox nuke` does before it removes everything; a run
//     that had not reached its warden only has its containers removed. An ordinary run asks
//     Docker nothing for this: it looks at the lock files, which are there only while a run
//     is.
//
// Nothing abox does for a person holds a run up either: the agent's output is shown through a
// queue of its own ([display]), so abox whose output nobody reads (a pager left on its first
// page, a terminal stopped with Ctrl-S) still ends its run on a signal or at its deadline.
//
// The warden finishes a run from warden.json in the run's directory, which abox rewrites at each
// step the warden must know of (the agent about to start, with its deadline; the teardown
// begun, with what abox knew; the run recorded): a run abox recorded is not recorded again, and
// one whose teardown abox began keeps abox's outcome, exit code and notes.
package sandbox
