// Package provision prepares a project's sandbox and takes it apart again: the sequences of
// `abox up` ([Up]), `abox render` ([Render]) and `abox nuke` ([Nuke]), each under the
// project's lock.
//
// # Why the order is the point
//
// The manifest lives in the workspace, which the agent can write. So Up approves first: a
// manifest that reaches further than the approved one is shown and must be consented to, and a
// corrupt approval is never replaced silently; a refusal renders, creates and builds nothing.
// Then it renders the artifacts, creates the network and the ~/.claude volume, builds the agent
// image (its Claude Code download is what most often needs the network, so its error comes
// first) and netd's, gives the volume to the agent, reconciles the profile's gateway and records
// the baseline of what runs outside the sandbox (only the sections never recorded, so a later up
// never accepts what a run changed). The approval is recorded last: an up that failed approved
// nothing, and the next one asks again.
//
// Nuke removes what abox made for the project and nothing of another's: its labelled containers
// (holding off a spare netd being started, so that none is left behind), its gateway bindings
// and a gateway no project needs any more, its caches and its state, then the clones of its
// isolated runs; the Claude login volume only when the caller says so.
//
// # What stays with the caller
//
// The person at the terminal and the words. An [Env] brings the docker client, the render spec,
// the daemon check, Confirm, which asks a question (nil when there is no terminal: a question
// that must be asked is then a refusal), and Report, which is told each [Event] as it happens
// so that the caller prints it in order. Refusals are sentinels ([ErrUnconfirmed],
// [ErrDeclined]) and a [*NotReplacedError]; a failed step whose fix the caller names is a
// [*StepError]. Nothing here names an abox command.
package provision
