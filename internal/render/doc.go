// Package render turns a manifest and the global configuration into the artifacts that define a
// project's sandbox: the docker argv of its two containers (runspec.json), the agent and netd
// Dockerfiles, the nftables ruleset and netd policy, the agent's mcp.json and settings.json, the
// project's gateway catalog entries, and artifacts.json with the hash of each.
//
// Rendering is pure and deterministic: it does no I/O (the caller reads inputs and writes
// outputs), and the same inputs give byte-identical artifacts, so artifacts.json is a baseline
// doctor can audit against.
//
// The authoritative copy lives in abox's state directory, outside the workspace the agent can
// write, and is what abox runs. The copy in the repo's .devcontainer/ is for review only: a
// compose file with the same netd + agent pair, so an editor opening it gets the same sandbox.
// abox never reads it back, so an agent that rewrites it changes nothing but a doctor finding.
package render
