// Package doctor audits the live machine against a project's artifacts: `abox doctor`.
//
// # Evidence from the machine
//
// The manifest is the user's wish, written in a workspace the agent can write. Doctor never
// takes it at its word. Each check looks at what actually exists: the rendered artifacts and
// their hashes in artifacts.json, the literal docker argv in runspec.json, `docker inspect` of
// the images, the network, the gateway and any running sandbox, the ruleset a running netd has
// loaded (read back with nft and compared with the one abox renders), the review queue netd
// logged, and fingerprints of the files that run code outside the sandbox. Where the manifest is
// read at all, it is to compare it with the copy `abox up` approved.
//
// # Checks
//
// A [Check] is one small function with a stable id "<area>.<kebab>" (the ids of the original
// Python abox are kept where the meaning is the same), a lower-case title, and a [Finding]:
// ok, warn, fail or skip, with a hint naming an abox command on every warn and fail. [All] lists
// them in report order, explicitly; per-item checks (boundary.*) come from factories. A check
// never panics and never returns an error: when it cannot look, that is its finding. [Run] runs
// checks one after the other, so the report is deterministic, and [Env] caches every docker
// inspect so that twenty checks looking at one container ask the daemon once.
//
// # Boundary
//
// [Boundary] is the subset that must hold before an agent may run with bypassPermissions: the
// artifacts rendered, current and private, the approved manifest, no docker socket, no
// published port, no capability, no new privileges, a non-root user, netd's network namespace,
// the ruleset and the single token-free MCP endpoint. It reads only abox's own state, never the
// daemon, so `abox run` can ask it before anything starts.
//
// # Residual risks
//
// [Risks] states, on every run, what abox knows it does not prevent, each with what this
// machine shows: which MCP servers have network, how many domains are allowed, which secrets
// the agent holds, the Claude credential volume, connectors.
//
// # Probes
//
// [Probes] start a throwaway sandbox of the project whose agent runs a probe script instead of
// Claude Code, as the agent user, and tries each escape route: an unlisted name, Docker's resolver,
// an IP literal, IPv6, the host's bridge address, the gateway directly, changing the ruleset, a
// setuid binary. They target only the project's own containers, loopback and names under
// .invalid, never an outside address.
package doctor
