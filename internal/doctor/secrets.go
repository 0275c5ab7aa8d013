package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/termtext"
)

// secretStore asks, once, which store the host has. Without a daemon there is no answer: abox
// never guesses, since a stopped Docker Desktop would otherwise look like plain Engine.
func (e *Env) secretStore(ctx context.Context) (secrets.Choice, error) {
	return e.cache.store.get(func() (secrets.Choice, error) {
		if !e.daemonUp(ctx) {
			return secrets.Choice{}, secrets.ErrNoDaemon
		}
		return secrets.Detect(ctx, e.Docker, e.Paths.SecretsStore())
	})
}

// requiredSecrets is the project's required set, the same one `abox secrets check` uses.
func (e *Env) requiredSecrets() []secrets.Need {
	return secrets.Required(e.Manifest, e.approvedManifest(), e.Catalog)
}

// secretsStore: the store in use and what it protects against. abox's own store must be
// private: a 0700 directory and 0600 files, like the salt, secrets.json and the gateways'
// secrets files.
func secretsStore(ctx context.Context, e *Env) Finding {
	c, err := e.secretStore(ctx)
	if err != nil {
		return skipf("start the Docker daemon, then run `abox doctor` again", "%v", err)
	}
	f := okf("%s (%s): %s", c.Store.Kind(), c.Why, c.Store.Claim())
	if c.Store.Kind() == secrets.KindAbox {
		if bad := e.looseSecretFiles(); len(bad) > 0 {
			f = failf("`chmod 700` the directory and `chmod 600` the files; `abox secrets set` tightens the store directory",
				"readable by other users: %s", strings.Join(bad, ", ")).with("loose", bad)
		}
	}
	return f.with("kind", c.Store.Kind()).with("why", c.Why).with("claim", c.Store.Claim())
}

// looseSecretFiles lists the files of abox's store that group or others may read.
func (e *Env) looseSecretFiles() []string {
	var bad []string
	check := func(path string, want os.FileMode) {
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&^want != 0 {
			bad = append(bad, fmt.Sprintf("%s (%04o)", path, st.Mode().Perm()))
		}
	}
	dir := e.Paths.SecretsStore()
	check(dir, 0o700)
	entries, _ := os.ReadDir(dir)
	for _, d := range entries {
		check(filepath.Join(dir, d.Name()), 0o600)
	}
	check(e.Paths.SecretsSalt(), 0o600)
	check(e.Paths.SecretsState(), 0o600)
	profiles, _ := gateway.Profiles(e.Paths.GatewaysDir())
	for _, p := range profiles {
		check(filepath.Join(e.Paths.Gateway(p), gateway.SecretsFile), 0o600)
	}
	return bad
}

// secretsPresent: every secret the project requires — its servers', its remote servers', and
// those attached to its agent — is in the store. The gateway would otherwise hand a server the
// string <UNKNOWN>, and a run would refuse to start.
func secretsPresent(ctx context.Context, e *Env) Finding {
	if e.Manifest == nil && e.approvedManifest() == nil {
		return skipf("fix agentbox.yaml; `abox doctor` reports why under manifest.schema", "the manifest did not load")
	}
	needs := e.requiredSecrets()
	if len(needs) == 0 {
		return okf("the project requires no secret")
	}
	c, err := e.secretStore(ctx)
	if err != nil {
		return skipf("start the Docker daemon, then run `abox doctor` again", "%v", err)
	}
	stored, err := c.Store.List(ctx)
	if err != nil {
		return failf("retry with `abox --verbose doctor` to see the docker commands", "listing the %s store: %v", c.Store.Kind(), err)
	}
	var missing, names []string
	for _, name := range secrets.Names(needs) {
		if !slices.Contains(stored, name) {
			missing = append(missing, fmt.Sprintf("%s (%s)", termtext.Line(name), usersOf(needs, name)))
			names = append(names, name)
		}
	}
	if len(missing) > 0 {
		return failf(fmt.Sprintf("store it with `abox secrets set %s`, or map it in secrets.yaml and run `abox secrets sync`", names[0]),
			"not in the %s store: %s", c.Store.Kind(), strings.Join(missing, ", ")).with("missing", names)
	}
	return okf("%s, all in the %s store", plural(len(secrets.Names(needs)), "required secret", "required secrets"), c.Store.Kind()).
		with("required", secrets.Names(needs))
}

// secretsFresh: the sources secrets.yaml names for the required secrets hold what the store
// holds. It reads those sources (op may ask to unlock), so --quick skips it.
func secretsFresh(ctx context.Context, e *Env) Finding {
	switch {
	case e.Quick:
		return skipf("", "skipped with --quick: secret sources were not read")
	case e.SecretSources == nil:
		return skipf("", "secret sources were not read")
	}
	needs := e.requiredSecrets()
	cfg, err := config.LoadSecrets(e.Paths.SecretsFile())
	if err != nil {
		return failf("fix "+e.Paths.SecretsFile(), "%s", oneLine(err))
	}
	var mapped []config.SecretMapping
	for _, name := range secrets.Names(needs) {
		if mp, ok := cfg.Lookup(name); ok {
			mapped = append(mapped, mp)
		}
	}
	if len(mapped) == 0 {
		return okf("no required secret is mapped in secrets.yaml")
	}
	m, err := e.secretsManager(ctx)
	if err != nil {
		return skipf("start the Docker daemon, then run `abox doctor` again", "%v", err)
	}
	var stale []string
	for _, mp := range mapped {
		if r := m.Check(ctx, mp); !r.OK() && r.Status != secrets.MissingInStore {
			stale = append(stale, fmt.Sprintf("%s %s (%s)", r.Secret, r.Status, termtext.Line(r.Detail)))
		}
	}
	if len(stale) > 0 {
		return warnf("run `abox secrets sync`; `abox secrets check` shows every secret", "%s", strings.Join(stale, "; ")).with("stale", stale)
	}
	return okf("the store matches %s", plural(len(mapped), "mapped source", "mapped sources"))
}

// secretsSources: no file source of secrets.yaml lies where the agent can read it, in the
// workspace or a mounts.context directory. The agent runs as the workspace owner, often the user who
// owns the file, so its mode does not stop it: such a secret is as good as attached.
func secretsSources(_ context.Context, e *Env) Finding {
	cfg, err := config.LoadSecrets(e.Paths.SecretsFile())
	if err != nil {
		return failf("fix "+e.Paths.SecretsFile(), "%s", oneLine(err))
	}
	roots := []string{e.Project.Workspace}
	if m := e.approvedManifest(); m != nil {
		roots = append(roots, m.Mounts.Context...)
	}
	if e.Manifest != nil {
		roots = append(roots, e.Manifest.Mounts.Context...)
	}
	var bad []string
	for _, mp := range cfg.Mappings {
		if mp.Kind() != config.SecretFile {
			continue
		}
		file := realPath(homePath(mp.File, e.Home))
		for _, r := range roots {
			if root := realPath(homePath(r, e.Home)); within(file, root) {
				bad = append(bad, fmt.Sprintf("%s (%s, inside %s)", mp.Secret, file, root))
				break
			}
		}
	}
	if len(bad) > 0 {
		return warnf("move the file out of the workspace and the context directories, then run `abox secrets sync` (a path in mounts.mask is hidden from the agent)",
			"the agent can read these secret sources: %s", strings.Join(bad, ", ")).with("readable", bad)
	}
	return okf("no file source is in the workspace or a context directory")
}

// homePath expands a leading ~ with home.
func homePath(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// realPath is p absolute with symlinks resolved where it exists.
func realPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within reports whether path is root or inside it.
func within(path, root string) bool {
	return root != "" && (path == root || strings.HasPrefix(path, strings.TrimSuffix(root, "/")+"/"))
}

// secretsManager is a read-only [secrets.Manager] on the host's store, for comparisons.
func (e *Env) secretsManager(ctx context.Context) (*secrets.Manager, error) {
	c, err := e.secretStore(ctx)
	if err != nil {
		return nil, err
	}
	salt, err := secrets.LoadSalt(e.Paths.SecretsSalt())
	if err != nil {
		return nil, err
	}
	state, err := secrets.LoadState(e.Paths.SecretsState())
	if err != nil {
		return nil, err
	}
	return &secrets.Manager{Store: c.Store, Sources: e.SecretSources, Digests: secrets.NewDigester(salt, 0),
		State: state, StatePath: e.Paths.SecretsState(), Now: e.Now}, nil
}

// attachedMissing lists the attached secrets the store does not hold; nil when the store
// cannot be asked.
func (e *Env) attachedMissing(ctx context.Context, attached map[string]string) []string {
	c, err := e.secretStore(ctx)
	if err != nil {
		return nil
	}
	stored, err := c.Store.List(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, env := range slices.Sorted(maps.Keys(attached)) {
		if !slices.Contains(stored, attached[env]) {
			out = append(out, env+"←"+attached[env])
		}
	}
	return out
}

// secretsStoreRisk states the store's claim on every run: abox's own store is weaker than a
// keychain, and says so.
func (e *Env) secretsStoreRisk(ctx context.Context) Risk {
	r := Risk{ID: "risk.secrets-store", Title: "secrets store", Applies: true, Data: map[string]any{}}
	c, err := e.secretStore(ctx)
	if err != nil {
		r.Detail, r.Hint = "unknown: "+err.Error(), "start the Docker daemon, then run `abox doctor` again"
		return r
	}
	r.Data["kind"], r.Data["why"] = c.Store.Kind(), c.Why
	r.Detail = c.Store.Kind() + ": " + c.Store.Claim()
	if c.Store.Kind() == secrets.KindDesktop {
		r.Applies, r.Hint = false, "nothing to do"
		return r
	}
	r.Hint = "keep abox's state directory off shared disks and out of unencrypted backups; on Docker Desktop abox uses its keychain-backed store"
	return r
}

func usersOf(needs []secrets.Need, name string) string {
	var out []string
	for _, n := range needs {
		if n.Secret == name {
			out = append(out, n.String())
		}
	}
	return strings.Join(out, ", ")
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	var me *manifest.Error
	if errors.As(err, &me) && len(me.Problems) > 0 {
		s = me.Source + ": " + me.Problems[0].Loc + ": " + me.Problems[0].Msg
	}
	return termtext.Line(s)
}

// plural returns "1 thing" or "N things".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
