// Package policy is the contract between the abox CLI, which renders a sandbox's network policy,
// and netd, which enforces it from inside the sandbox's network namespace.
//
// The CLI writes two files into the directory netd mounts read-only at [Dir]: the nftables
// ruleset [RulesFile], loaded once at start, and the netd policy [File] (allowlist, MCP
// forwarding), which netd re-reads on SIGHUP so that `abox egress add` reaches a running sandbox.
// netd writes its decisions as JSON lines under [LogDir], in its own filesystem, where the agent
// cannot reach them; the CLI harvests them at teardown. The record types here are those lines.
//
// The constants fix the uids and loopback ports both sides agree on: the rendered ruleset names
// them, netd binds them, and doctor checks them.
package policy
