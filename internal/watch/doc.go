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
// Two fingerprints are kept:
//
//   - [GitState] reads .git/config (and the files it includes) without running git, which would
//     itself execute what it is asked to check, and keeps only the keys that run code or
//     redirect credentials, plus the content hash of every hook;
//   - [Files] hashes the files matched by the watch patterns, records symlinks by their target
//     without following them, and caps each pattern so a huge directory cannot stall doctor.
//
// Both are flat maps from a name to a fingerprint, stored in a [Baseline] and compared with
// [Diff]. The first look records a baseline (trust on first use); later looks report what
// changed until the user accepts it.
package watch
