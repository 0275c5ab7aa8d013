// Package edit applies the edits a user makes to a project's agentbox.yaml from the host —
// `abox egress add/rm/ignore/unignore`, `abox mcp add/rm/add-remote/rm-remote/import`, `abox
// secrets attach/detach` — by one rule: the project's lock is held, a workspace manifest with
// changes nobody approved is refused first, the whole result is re-validated and written
// atomically, the approved copy gets exactly the same edit, the artifacts are rendered again, and
// the project's running sandboxes are told to re-read their policy.
//
// It exists because that sequence, and what each command decides around it (which hosts are
// mandatory, when a removal that running sandboxes did not get is a failure, when a server is
// already declared or remote), is policy: a second copy that skipped a step would let an edit
// approve what the agent wrote, or leave a sandbox reaching what was just removed. It joins
// approval, project, catalog and sandbox; cli keeps only the flags, the output and the hints,
// which it attaches to the typed errors here.
package edit
