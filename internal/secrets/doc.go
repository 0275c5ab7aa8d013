// Package secrets moves secret values from where the user keeps them to the MCP servers that
// need them (and, when attached, to the agent), and keeps the record that lets abox say what
// would break if one were rotated or revoked.
//
// # Sources
//
// secrets.yaml names, for each secret, where its value comes from: 1Password (`op read`), a
// file that only its owner can read, a host environment variable, a no-echo prompt, or
// "docker": already in the store, only verified. [Sources] reads them. A missing op binary only
// matters to the secrets that name op. Empty values, and values holding a line break, are
// refused: the gateway's secrets file and docker's env files are line-based.
//
// # Stores
//
// [Detect] picks the store from what the host has. On Docker Desktop with a working `docker
// mcp`, values go into Desktop's secrets engine (the OS keychain) over stdin, and consumers get
// se://docker/mcp/<name> references that the daemon resolves when it starts a container, so
// abox writes no value to disk. On plain Docker Engine there is no such engine: [FileStore]
// keeps one 0600 file per secret in a 0700 directory of abox's state. That is weaker than a
// keychain (any process of the user, root and backups can read it) and doctor says so on every
// run. The OS keyring (Secret Service) is not used: reaching it needs a D-Bus client, a new
// dependency, or secret-tool and an unlocked session keyring, which headless Engine hosts lack;
// and the gateway must read its values from a file anyway.
//
// # Where values go, and where they never go
//
// A value travels from its source to the store over a pipe or an in-process read, and from the
// store to a consumer as a file of mode 0600 or on the docker CLI's stdin. It never appears in
// an argv, an environment abox gives the docker CLI, an error message or a log line. The
// gateway gets a secrets file (see [GatewayFile]) holding exactly the secrets its servers
// declare; on plain Engine that file is a second copy of those values and counts as part of the
// store. The agent gets attached secrets as an env file piped to `docker create` ([EnvFile]).
//
// # Digests
//
// secrets.json records, per secret, a digest of its value for drift detection, its source and
// its reference (an op:// reference, a path, a variable name), never the value. A bare sha256 of
// a low-entropy secret is a verifier that can be cracked offline, so the digest is PBKDF2 with a
// random per-installation salt (secrets.salt, 0600) and a work factor ([Digester]).
//
// # Who uses what
//
// [Needs] is the one definition of what a manifest requires: secrets attached to the agent,
// secrets of its declared catalog and custom servers, and secrets of its remote servers. `abox
// secrets check`, doctor and the gateway's start all use it. [BuildIndex] applies it to every
// project registered on any profile, so `abox secrets ls` shows the blast radius of each secret,
// and names the projects whose manifest has moved instead of silently dropping them.
//
// # Commands
//
// [Host] is the machine as the `abox secrets` commands see it, and its methods are what each
// command does ([Host.Set], [Host.Remove], [Host.List], [Host.Sync], [Host.Check],
// [Host.Attach], [Host.Detach]) and what a run and a gateway start receive ([Host.AgentEnv],
// [Host.GatewaySecrets]). They return reports with their own text writers and typed errors
// ([*ReadError], [*InUseError], [*AttentionError], …) that cli maps to the hint naming the abox
// command that fixes them. The no-echo prompt is injected ([TerminalPrompt]), so that a test
// can type a value and check that it is written nowhere.
package secrets
