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

// # What the gateway does with the servers it starts
//
// Read from docker/mcp-gateway's source (v0.43.3 and the commits after it; earlier releases
// differ where said), because abox's controls rest on it:
//
//   - Each stdio server runs in a container the gateway starts with the docker CLI through the
//     mounted socket: `docker run --rm -i --init --security-opt no-new-privileges --cpus 1
//     --memory 2Gb --pull never`, labelled docker-mcp=true and docker-mcp-name=<server>, with no
//     --name, no capability drop and no read-only root. Secrets reach it as -e NAME with the
//     value in the CLI's environment, never in the argv.
//   - Its network is every network of the gateway's own container, which the gateway finds by
//     inspecting the container its hostname names (DOCKER_MCP_IN_CONTAINER=1); nothing else
//     chooses it. A catalog entry's disableNetwork gives --network none instead
//     (server_network: none). Catalog allowHosts does nothing without --block-network, and with
//     it a server keeps the gateway's networks beside the proxies', so it fences nothing for a
//     gateway in a container.
//   - The pool of servers is keyed by server and MCP session. Without --long-lived every tool
//     call starts a container and closes it after the call (stdin closed, SIGTERM 5 s later,
//     SIGKILL 5 s after that); each tools/list_changed a server sends makes the gateway list its
//     tools again through yet another container. With it, a server's container is started at
//     the first call of a session and released when the session closes: a DELETE of a session
//     that sent initialized, or the gateway's stop, which closes the containers one after
//     another. The release at a session's end exists from v0.42.2; before, kept containers piled
//     up until the gateway stopped. A DELETE that arrives while a server's tools are listed
//     again deadlocks the release, and the container stays ([Servers.Sweep]).
//   - At start the gateway runs every server once, in a container of no session, to list its
//     tools.
//   - Remote servers are reached from the gateway's own process, on its network and resolver.
//     From v0.43.1 their URL must be https to a host whose every address is public, and the
//     client ignores HTTP_PROXY and HTTPS_PROXY.
//   - --verify-signatures checks docker.io/mcp/* images only (pinned by digest) against
//     signatures on Docker Hub, and fetches Sigstore's trust root at start when it has none
//     cached; it contacts neither Rekor nor Fulcio.
