// Package launch is one run of the sandbox from an approved project: the order of the checks,
// the run, its record and the isolated clone's collect. `abox run` and `abox shell` are one call
// to [Run]; the hidden `abox spare-netd` is one call to [Spare].
//
// sandbox knows how to check, start and tear down one sandbox; isolate how to make and collect a
// clone; secrets how to read what is attached to the agent. What none of them knows is the order
// in which a run asks them, and that order is part of the security argument:
//
//   - every refusal happens before any container starts: the options, the daemon and the
//     preflight (nothing runs but the approved sandbox), the attached secrets, the Claude login,
//     room to record the run, the baseline of what runs outside the sandbox, the clone;
//   - once the run started, what follows happens whatever became of it, Ctrl-C included: the
//     run is recorded, an isolated run's clone is collected (or discarded, if it was refused),
//     and the next run's spare netd is started;
//   - the run's verdict ([Report.Verdict]) puts a change to what runs outside the sandbox
//     first, so that nothing the agent prints can trade that status for another.
//
// launch returns sentinels and typed errors ([ErrFromWorktree], [ErrLoggedOut],
// [*ExecChangeError], …) and the errors of the packages it calls as they are; the caller maps
// them to hints and exit statuses. Only the caller names an abox command.
package launch
