// Package paths locates abox's configuration and state on the host.
//
// Configuration (config.yaml, secrets.yaml, custom-servers.yaml) lives in $ABOX_CONFIG_HOME, else
// $XDG_CONFIG_HOME/abox, else ~/.config/abox. State (rendered artifacts, run logs, tokens) lives in
// $ABOX_STATE_HOME, else $XDG_STATE_HOME/abox, else ~/.local/state/abox. Both are computed from an
// environment passed in as a value, so tests isolate them without touching the process.
//
// A project's state sits under a stable hash of its absolute path, so two checkouts of one
// repository never share a sandbox, and the workspace (which the agent can write) never holds
// anything abox later trusts.
package paths

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
)

// Paths are the two roots abox uses on the host.
type Paths struct {
	Config string // config.yaml, secrets.yaml, custom-servers.yaml
	State  string // everything abox generates
}

// FromEnv computes [Paths] from an environment lookup such as os.LookupEnv.
func FromEnv(lookup func(string) (string, bool)) (Paths, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return v
	}
	home := get("HOME")
	pick := func(own, xdg, fallback string) (string, error) {
		if v := get(own); v != "" {
			return filepath.Abs(v)
		}
		if v := get(xdg); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, "abox"), nil
		}
		if home == "" {
			return "", errors.New("cannot locate abox's directories: HOME is not set (set " + own + ")")
		}
		return filepath.Join(home, fallback, "abox"), nil
	}
	cfg, err := pick("ABOX_CONFIG_HOME", "XDG_CONFIG_HOME", ".config")
	if err != nil {
		return Paths{}, err
	}
	st, err := pick("ABOX_STATE_HOME", "XDG_STATE_HOME", filepath.Join(".local", "state"))
	if err != nil {
		return Paths{}, err
	}
	return Paths{Config: cfg, State: st}, nil
}

// ConfigFile is config.yaml.
func (p Paths) ConfigFile() string { return filepath.Join(p.Config, "config.yaml") }

// SecretsFile is secrets.yaml: where each secret comes from (references, never values).
func (p Paths) SecretsFile() string { return filepath.Join(p.Config, "secrets.yaml") }

// CustomServersFile is custom-servers.yaml.
func (p Paths) CustomServersFile() string { return filepath.Join(p.Config, "custom-servers.yaml") }

// SecretsState is secrets.json: for each stored secret its salted digest, source, reference and
// last sync time; never a value.
func (p Paths) SecretsState() string { return filepath.Join(p.State, "secrets.json") }

// SecretsSalt is secrets.salt, the random per-installation salt of the digests in secrets.json.
func (p Paths) SecretsSalt() string { return filepath.Join(p.State, "secrets.salt") }

// SecretsStore is abox's own secrets store, used where Docker Desktop's is not: one 0600 file
// per secret in this 0700 directory.
func (p Paths) SecretsStore() string { return filepath.Join(p.State, "secrets") }

// SecretsLock serialises the commands that change the store and secrets.json.
func (p Paths) SecretsLock() string { return filepath.Join(p.State, "secrets.lock") }

// GatewaysDir holds one directory per profile: token, registry, fingerprint, catalog.
func (p Paths) GatewaysDir() string { return filepath.Join(p.State, "gateways") }

// Gateway returns the state directory of one profile's gateway.
func (p Paths) Gateway(profile string) string { return filepath.Join(p.GatewaysDir(), profile) }

// ClaudeReleases caches the native Claude Code binaries abox downloaded and verified, shared by
// every project: <version>/<platform>/{claude,release.json}.
func (p Paths) ClaudeReleases() string { return filepath.Join(p.State, "claude-code") }

// Project returns the state of the project whose workspace is at the absolute path ws.
func (p Paths) Project(ws string) Project {
	h := Hash(ws)
	return Project{Workspace: ws, Hash: h, Dir: filepath.Join(p.State, "projects", h)}
}

// Hash is the first 12 hex digits of sha256 of the workspace's absolute path.
func Hash(ws string) string {
	sum := sha256.Sum256([]byte(ws))
	return hex.EncodeToString(sum[:])[:12]
}

// Project is one project's state directory and its layout.
type Project struct {
	Workspace string // absolute path of the workspace
	Hash      string // [Hash] of Workspace
	Dir       string // <state>/projects/<hash>
}

// Artifacts is the authoritative rendered artifacts directory.
func (p Project) Artifacts() string { return filepath.Join(p.Dir, "artifacts") }

// Runs holds one directory per run: transcript, harvested netd logs, counters.
func (p Project) Runs() string { return filepath.Join(p.Dir, "runs") }

// RunsIndex is the append-only runs.jsonl.
func (p Project) RunsIndex() string { return filepath.Join(p.Dir, "runs.jsonl") }

// Denied is denied.jsonl, the egress review queue: the names each run looked up or connected
// to and was refused.
func (p Project) Denied() string { return filepath.Join(p.Dir, "denied.jsonl") }

// Approved is the manifest recorded by the last `abox up`.
func (p Project) Approved() string { return filepath.Join(p.Dir, "approved.yaml") }

// Baselines holds the git-tamper and watch fingerprints.
func (p Project) Baselines() string { return filepath.Join(p.Dir, "baselines.json") }

// Lock is the per-project lock file for mutating commands.
func (p Project) Lock() string { return filepath.Join(p.Dir, "lock") }

// Masks holds the empty file and directory bound over masked paths.
func (p Project) Masks() string { return filepath.Join(p.Dir, "masks") }

// MaskRecord is masked.json: the identity (inode) of every masked path at the last run, so that
// the next run masks that content wherever the agent moved or linked it.
func (p Project) MaskRecord() string { return filepath.Join(p.Dir, "masked.json") }

// LiveLock is held by every sandbox of the project while it exists; one whose workspace holds
// masked paths holds it alone.
func (p Project) LiveLock() string { return filepath.Join(p.Dir, "live.lock") }

// VolumeOwner records the uid:gid the project's ~/.claude volume was last given to, so that
// `abox up` re-owns it when the agent's identity changes.
func (p Project) VolumeOwner() string { return filepath.Join(p.Dir, "volume-owner") }

// Build is the staged image build context (Dockerfiles, CA certificates, binaries).
func (p Project) Build() string { return filepath.Join(p.Dir, "build") }

// Clones holds one private git clone per isolated run, each the only thing that run's agent
// sees at /workspace (internal/isolate). It is outside the workspace and outside Runs, so
// nothing abox later reads as its own record is ever in a directory an agent wrote.
func (p Project) Clones() string { return filepath.Join(p.Dir, "clones") }

// Clone is the private clone of the isolated run id.
func (p Project) Clone(id string) string { return filepath.Join(p.Clones(), id) }

// Isolated holds one record per isolated run: its branch, base, tip and state (pending, merged,
// discarded). The records sit beside the clones, never in one.
func (p Project) Isolated() string { return filepath.Join(p.Dir, "isolated") }

// IsolatedRun is the record of the isolated run id.
func (p Project) IsolatedRun(id string) string { return filepath.Join(p.Isolated(), id+".json") }

// Meta records the workspace path, so state can be traced back to its project.
func (p Project) Meta() string { return filepath.Join(p.Dir, "project.json") }

// ExpandHome replaces a leading "~" or "~/" in p with home, the way a shell would for the
// paths users write in config.yaml and on the command line; any other p is returned as is
// ("~user" is not expanded).
func ExpandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}
