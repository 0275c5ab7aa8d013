// Package telemetry keeps a project's local record of its runs: runs.jsonl (one row a run), the
// netd logs harvested from each run, and the egress review queue built from them — the names
// the agent looked up or connected to and was denied.
//
// Everything here is read from files abox harvested from netd at teardown, or observed by abox
// itself on the host, never from anything the agent could write.
package telemetry
