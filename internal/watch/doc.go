// Package watch fingerprints the parts of a workspace that make code run outside the sandbox,
// later, so that `abox doctor` can say what changed since the last look.
//
// The agent writes /workspace, a live bind of the user's checkout. Most of what it writes is the
// point of the exercise, but some files execute elsewhere: a CI workflow on a runner, a Makefile
// target on the next make, a package.json script on the next install, an editor task, a Claude
// Code hook in .claude/ that the host's own Claude Code runs. And .git/config can make the
// user's next `git status` run a program (core.fsmonitor), or send their credentials somewhere
// else (credential.helper, url.*.insteadOf). None of that runs in the container, so none of
// abox's controls apply; masking every such path would break ordinary work. abox watches them
// instead and reports a change as its own finding.
//
// Two fingerprints are kept, together a [Snapshot] taken by [Take]:
//
//   - [GitState] reads .git/config (and the files it includes) without running git, which would
//     itself execute what it is asked to check, and keeps only the keys that run code or
//     redirect credentials, plus the fingerprint of every hook;
//   - [Files] fingerprints the files matched by the watch patterns: a regular file by content, a
//     symlink by its target, a FIFO, socket or device by its type.
//
// Both are flat maps from a name to a fingerprint. `abox up` records them as the project's
// [Baseline] before any agent can have run, so nothing an agent plants is ever accepted without
// the user saying so; every run compares a snapshot taken before its agent starts with one taken
// after its containers are gone ([Compare]), and doctor compares the workspace with the
// baseline until the user accepts the change.
//
// # A hostile workspace
//
// The agent chose every byte and every file type under the workspace, and the snapshot is taken
// on the host, as the user. So a snapshot opens nothing but regular files, with O_NONBLOCK and
// O_NOFOLLOW (internal/wsfile), follows a symlink only while it stays in the workspace (where it
// leads is walked link by link as the kernel walks it, up to Linux's 40: internal/linkwalk),
// hashes a file only up to [MaxHashBytes] (a larger one, or one past the snapshot's
// [MaxHashTotal], is fingerprinted by size, inode and ctime, which the agent cannot forge), and
// bounds the entries one pattern visits, the names read from one directory and the depth
// ([MaxPerPattern], [MaxDirEntries], [MaxDepth]). A pattern that hits a bound is [Capped], and a
// cap that was not there before is itself a change: a bound may make a snapshot report too
// much, never hide what it did not look at.
package watch
