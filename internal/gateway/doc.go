// Package gateway manages the per-profile MCP gateway: its bearer token, the registry of
// projects bound to a profile, the union catalog it serves, and the container's lifecycle.
//
// # One gateway per profile, serving a union
//
// Every project on a profile shares one docker/mcp-gateway container, abox-gw-<profile>. The
// [Registry] (gateways/<profile>/registry.json) records what each bound project declares; the
// gateway serves their [Union]: servers and remote servers unioned, server_network: none
// most-restrictive-wins, and tool narrowing rendered as server:tool for narrowed servers and
// server:* for the others. (The original passed bare tool names, and so disabled every tool of
// every un-narrowed server on the profile.) Each project's own narrowing is enforced again by
// its netd, which filters what the union offers.
//
// # The token
//
// The token authenticates netd's forwarder to the gateway. The agent never holds it: mcp.json
// points at netd, and only netd's root process reads the token file, which is mounted into netd
// alone. It never appears in an argv, an error message or a log line: the gateway gets it through
// a 0600 --env-file removed right after `docker run`, and the health probe reads it on stdin.
// The fingerprint keeps only its hash, so a rotated token recreates the gateway.
//
// # Why abox validates and pre-pulls
//
// The gateway logs an unknown server, a missing catalog or a failed pull and starts anyway with
// fewer tools, and reports healthy. abox checks the union against the catalog first, pulls
// every server image itself (the gateway runs them with --pull never), and probes the started
// gateway with a real MCP initialize and tools/list from inside the network, since the gateway
// publishes no port.
//
// # Reconciling, and the scope rule
//
// [Reconcile] is the whole of `abox gateway up` (and of the gateway half of `abox up`): under
// the profile's lock it plans, refuses a plan that would let a project's netd pass other
// projects' tools, has errors or lacks secrets, and then starts and probes the gateway. Its
// dependencies come in an [Env] (docker, paths, configuration, the secrets renderer, progress
// and warnings), and its refusals are typed errors the CLI turns into hints and exit codes.
// Whether a project's netd keeps its agent to the project's own tools is decided by one rule,
// shared by Reconcile ([Registry.Leaks]), a run's preflight and doctor ([ProjectScope]).
package gateway
