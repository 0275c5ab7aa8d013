// Package netd is the in-sandbox network daemon: the only way out of a sandbox's network
// namespace.
//
// The agent is treated as hostile, so nothing that enforces its egress may run inside the agent
// container or be changeable from it (DESIGN §2.1). netd runs as the first container of a run and
// owns the namespace; the agent joins it with no capabilities, so the rules netd loads there hold
// even if the agent becomes root.
//
// netd is two processes from one binary:
//
//   - the supervisor ([Main]) runs as root with CAP_NET_ADMIN and never touches the network. It
//     loads the rendered ruleset (policy.RulesFile) atomically with nft, reads the gateway token,
//     opens the decision logs, starts the serving child, self-tests it and prints the one "ready"
//     line the CLI waits for. It adds (address . port) elements to the ruleset's sets only on the
//     child's request, after validating it, and it reloads on SIGHUP and writes the counters on
//     SIGTERM;
//   - the serving child (`netd serve`) runs as policy.NetdUID with no capabilities at all. It
//     serves on loopback only: a DNS resolver that answers only allowed names, a TLS proxy that
//     decides on the ClientHello's server name without terminating TLS, a plain-HTTP proxy that
//     decides on the Host header, and the MCP forwarder that adds the gateway token the agent
//     never sees, narrows the project's tools, and closes at stop the gateway sessions the agent
//     left open.
//
// Whenever netd connects out, it resolves the name itself and dials the address it resolved: the
// agent never chooses an IP. Every decision is logged as JSON lines under policy.LogDir, repeats
// aggregated, up to a cap past which denials are still kept and every loss is counted (logs.go).
// If netd dies, the namespace loses its interfaces and the agent is offline: it fails closed.
package netd
