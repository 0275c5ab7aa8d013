// Package remedy says how a person gets past an error abox returns: the exit status it ends
// abox with, and the one line, under the error, that names the command or change that fixes
// it.
//
// Domain packages return errors that say what went wrong: sentinels, and typed errors with the
// fields a fix needs (a secret's name, a run's id, the step that failed). This package is the
// one place that turns them into hints naming abox commands, so that the hints can be read,
// reviewed and tested together, apart from the command tree; cli calls it and prints. It prints
// nothing itself: what an error carries for a person to read first (a diff, a build log, a
// gateway's log) is shown by cli before the error.
//
// Every function takes an error and returns it with a hint (or an exit status) attached, or
// unchanged when it does not know it; nil stays nil.
package remedy
