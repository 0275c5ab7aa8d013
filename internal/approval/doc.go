// Package approval is the approved manifest: the copy of agentbox.yaml that the last explicit
// `abox up` recorded in the project's state (approved.yaml).
//
// agentbox.yaml lives in the workspace, which the agent can write, so what a run, the gateway
// registry and the secrets plumbing use is this copy, never the workspace's. That makes the
// file a security boundary, and every reader goes through [Load], which has one rule for a file
// it cannot trust: a missing file is [ErrNotApproved], and one that is not a regular file (a
// symlink included), cannot be read, or does not parse is a [*CorruptError] matching
// [ErrCorrupt]. Both are boundary refusals. Nothing here turns either into "nothing was
// approved" or replaces the file: a caller that may go on without an approval (the first `abox
// up`, an edit of a never-approved project) says so by testing for ErrNotApproved alone.
package approval
