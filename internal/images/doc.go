// Package images builds abox's two images: the agent image of a project and the netd image
// every project shares.
//
// What goes into the agent image is a boundary: the Claude Code binary the agent runs, the CA
// certificates it trusts. So nothing is built from an input that is not what vouches for it. A
// Claude Code file is checked against claude_code.sha256; the native build against its
// release's manifest or the pinned sha256 (see [claudecode.Fetcher]); rtk against rtk.sha256.
// A binary that does not match is refused ([Error] with Refused set, exit 3 in `abox up`)
// before anything is staged or built, and the rendered Dockerfile checks each copy again.
//
// A build context is staged beside its directory and renamed into place, so an interruption
// or a failed copy leaves the previous context or none, never part of one. A failed build is a
// [*BuildError] holding the tail of the build's log.
//
// Everything the package reads from the host beyond the files config.yaml names is passed in:
// the docker client, the clock, the home directory, the running abox binary, and a [Probe] of
// the host's tools (npm's registry, from which an npm-installed Claude Code is fetched, so a
// mirror the host uses is honoured). Tests pass fakes; there is no package state.
package images
