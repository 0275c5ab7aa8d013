// Package claudecode fetches Claude Code's native binary the way its official installer does and
// verifies it, so that `claude_code.source: native` needs a version from the user and nothing
// else: the checksum comes from the release itself, not from someone pasting it into
// config.yaml.
//
// # What the official installer does
//
// claude.ai/install.sh (the bootstrap script; read as published, with its base URL
// DOWNLOAD_BASE_URL=https://downloads.claude.ai/claude-code-releases — versions of early 2026 used
// a storage.googleapis.com bucket with the same layout) resolves a version from <base>/latest or
// <base>/stable, reads <base>/<version>/manifest.json, takes platforms[<platform>].checksum, a
// 64-digit lower-case sha256, for a platform key such as linux-x64, linux-arm64, darwin-arm64 or
// linux-x64-musl, downloads <base>/<version>/<platform>/claude and compares its sha256 with it.
// A manifest looks like
//
//	{"version": "2.1.76", "buildDate": "2026-03-14T00:18:17Z",
//	 "platforms": {"linux-x64": {"binary": "claude", "checksum": "<64 hex digits>", "size": 235555347}, …}}
//
// [Fetcher.Fetch] does the same for the pinned version (never latest or stable), and checks a
// little more than the script: the manifest names the version asked for, the platform's entry is
// the binary "claude", and the download has exactly the size the manifest gives. A sha256 in
// config.yaml wins: the manifest is then not read at all, which suits a mirror that keeps only
// the binaries.
//
// # What is not verified
//
// The manifest's own authenticity rests on TLS to the release host (or the mirror config.yaml
// names). Anthropic documents a detached OpenPGP signature of each manifest, manifest.json.sig
// beside it, and the key that signs it (code.claude.com/docs/en/setup, "binary integrity and code
// signing"); the installer script does not check it, and neither does abox yet: it carries no
// OpenPGP implementation, and the key could not be fetched and compared from where this code
// was written. Whoever can serve the release host, or the configured mirror, chooses the binary;
// pinning claude_code.sha256 from a source one trusts closes that.
//
// # The cache
//
// A verified binary is kept under the cache directory with a record of what it was verified
// against (release.json). The next build of the same version and platform reuses it after
// hashing it again, without the network; and if the cached binary is gone while the record
// remains, a manifest that now names another checksum for the same version is refused
// ([ChangedError]): a published release does not change.
//
// # What a release does with MCP tools
//
// [ToolSearchOf] says how a release, in the environment abox gives it, sends MCP tool
// definitions to the model (deferred behind its ToolSearch tool, or every schema on every
// turn), which `abox mcp cost` prices; toolsearch.go holds the facts it rests on.
package claudecode
