package secrets

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/statefs"
)

// Statuses of the rows of `secrets sync` and `secrets check`.
const (
	Created        = "created"
	Updated        = "updated"
	Unchanged      = "unchanged"
	WouldCreate    = "would-create" // --dry-run
	WouldUpdate    = "would-update" // --dry-run
	Synced         = "synced"       // the store holds what the source holds
	External       = "external"     // in the store, from a source abox does not read
	Drifted        = "drifted"
	MissingInStore = "missing-in-store"
	Unmapped       = "unmapped" // required, in neither secrets.yaml nor the store
	Unreadable     = "unreadable"
	Failed         = "failed"
)

// Row is one line of the sync or check table. Detail never holds a value.
type Row struct {
	Secret string `json:"secret"`
	Status string `json:"status"`
	Source string `json:"source"`
	Detail string `json:"detail"`
}

// OK reports whether the row is not a failure.
func (r Row) OK() bool {
	switch r.Status {
	case Created, Updated, Unchanged, WouldCreate, WouldUpdate, Synced, External:
		return true
	}
	return false
}

// Manager ties the sources, the store, the digests and secrets.json together for the commands
// that change or compare them. The caller holds the secrets lock around its use.
type Manager struct {
	Store     Store
	Sources   *Sources
	Digests   *Digester
	State     *State
	StatePath string
	Now       func() time.Time

	stored map[string]bool
}

// Stored reports whether the store holds name, listing the store once.
func (m *Manager) Stored(ctx context.Context, name string) (bool, error) {
	if m.stored == nil {
		names, err := m.Store.List(ctx)
		if err != nil {
			return false, err
		}
		m.stored = map[string]bool{}
		for _, n := range names {
			m.stored[n] = true
		}
	}
	return m.stored[name], nil
}

// Put stores value under name unless the store already holds exactly it, and records its
// digest, source and reference. It returns Created, Updated or Unchanged (WouldCreate or
// WouldUpdate with dryRun, which writes nothing).
func (m *Manager) Put(ctx context.Context, name string, value []byte, source, ref string, dryRun bool) (string, error) {
	if err := CheckValue(value); err != nil {
		return "", err
	}
	had, err := m.Stored(ctx, name)
	if err != nil {
		return "", err
	}
	status := Created
	if had {
		status = Updated
		if m.holds(ctx, name, value) {
			status = Unchanged
		}
	}
	if dryRun {
		return dryRunStatus(status), nil
	}
	if status != Unchanged {
		if err := m.Store.Set(ctx, name, value); err != nil {
			return "", err
		}
		m.stored[name] = true
	}
	rec := Record{Digest: m.Digests.Digest(value), Source: source, Reference: ref, SyncedAt: m.Now().UTC().Truncate(time.Second)}
	m.State.Secrets[name] = rec
	return status, m.State.Save(m.StatePath)
}

func dryRunStatus(status string) string {
	switch status {
	case Created:
		return WouldCreate
	case Updated:
		return WouldUpdate
	}
	return status
}

// holds reports whether the store holds exactly value under name: compared byte for byte where
// the store gives values back, else through the recorded digest.
func (m *Manager) holds(ctx context.Context, name string, value []byte) bool {
	stored, err := m.Store.Value(ctx, name)
	if err == nil {
		return bytes.Equal(stored, value)
	}
	rec, ok := m.State.Secrets[name]
	return errors.Is(err, ErrNotReadable) && ok && m.Digests.Matches(rec.Digest, value)
}

// Sync pushes the value of one mapping's source into the store.
func (m *Manager) Sync(ctx context.Context, mp config.SecretMapping, interactive, dryRun bool) Row {
	row := Row{Secret: mp.Secret, Source: mp.Kind()}
	stored, err := m.Stored(ctx, mp.Secret)
	if err != nil {
		return row.with(Failed, err.Error())
	}
	switch {
	case mp.Kind() == config.SecretDocker && stored:
		return row.with(External, "in the store, set outside abox")
	case mp.Kind() == config.SecretDocker:
		return row.with(MissingInStore, "source docker: expected in the store, but it is not there")
	case mp.Kind() == config.SecretPrompt && !interactive && stored:
		return row.with(Unchanged, "entered at a prompt; kept (--interactive asks again)")
	}
	value, err := m.Sources.Read(ctx, mp, interactive)
	if err != nil {
		return row.with(Unreadable, err.Error())
	}
	status, err := m.Put(ctx, mp.Secret, value, mp.Kind(), SourceRef(mp), dryRun)
	if err != nil {
		return row.with(Failed, err.Error())
	}
	return row.with(status, "")
}

// SyncAll is `abox secrets sync`: [Manager.Sync] of every mapping, one row each, in order.
func (m *Manager) SyncAll(ctx context.Context, mappings []config.SecretMapping, interactive, dryRun bool) []Row {
	var rows []Row
	for _, mp := range mappings {
		rows = append(rows, m.Sync(ctx, mp, interactive, dryRun))
	}
	return rows
}

// CheckAll is `abox secrets check`: a row for every mapping of cfg ([Manager.Check]), then one
// for every secret of required that cfg does not map ([Manager.CheckUnmapped]). A row that
// needs attention names who requires its secret, so the fix can be weighed against its use.
func (m *Manager) CheckAll(ctx context.Context, cfg *config.Secrets, required []Need) []Row {
	var rows []Row
	for _, mp := range cfg.Mappings {
		rows = append(rows, m.Check(ctx, mp))
	}
	for _, name := range Names(required) {
		if _, ok := cfg.Lookup(name); !ok {
			rows = append(rows, m.CheckUnmapped(ctx, name))
		}
	}
	for i, r := range rows {
		if users := UsersOf(required, r.Secret); users != "" && !r.OK() {
			rows[i].Detail = strings.TrimPrefix(r.Detail+"; needed by "+users, "; ")
		}
	}
	return rows
}

// Check compares one mapping's source with the store and writes nothing.
func (m *Manager) Check(ctx context.Context, mp config.SecretMapping) Row {
	row := Row{Secret: mp.Secret, Source: mp.Kind()}
	stored, err := m.Stored(ctx, mp.Secret)
	switch {
	case err != nil:
		return row.with(Failed, err.Error())
	case !stored:
		return row.with(MissingInStore, "")
	case mp.Kind() == config.SecretDocker:
		return row.with(External, "set outside abox")
	case mp.Kind() == config.SecretPrompt:
		return row.with(External, "entered at a prompt; not re-read")
	}
	value, err := m.Sources.Read(ctx, mp, false)
	if err != nil {
		return row.with(Unreadable, err.Error())
	}
	if m.holds(ctx, mp.Secret, value) {
		return row.with(Synced, "")
	}
	if _, ok := m.State.Secrets[mp.Secret]; !ok && m.Store.Kind() == KindDesktop {
		return row.with(Drifted, "no digest recorded: abox did not store this value")
	}
	return row.with(Drifted, "the source differs from the store")
}

// CheckUnmapped reports a required secret that secrets.yaml does not map.
func (m *Manager) CheckUnmapped(ctx context.Context, name string) Row {
	row := Row{Secret: name, Source: "-"}
	stored, err := m.Stored(ctx, name)
	switch {
	case err != nil:
		return row.with(Failed, err.Error())
	case stored:
		source := "not in secrets.yaml"
		if rec, ok := m.State.Secrets[name]; ok {
			row.Source, source = rec.Source, "set with abox, not in secrets.yaml"
		}
		return row.with(External, source)
	}
	return row.with(Unmapped, "required, in neither secrets.yaml nor the store")
}

// Remove deletes name from the store and drops its record.
func (m *Manager) Remove(ctx context.Context, name string) error {
	if err := m.Store.Remove(ctx, name); err != nil {
		return err
	}
	if m.stored != nil {
		delete(m.stored, name)
	}
	if _, ok := m.State.Secrets[name]; !ok {
		return nil
	}
	delete(m.State.Secrets, name)
	return m.State.Save(m.StatePath)
}

func (r Row) with(status, detail string) Row {
	r.Status, r.Detail = status, detail
	return r
}

// Open prepares a [Manager] on store for the host whose layout is ps: it loads the salt that
// keys the digests (creating it on first use) and secrets.json. A salt or state file that cannot
// be read is an [*OpenError] naming it; nothing is changed then.
func Open(ps paths.Paths, store Store, src *Sources, now func() time.Time) (*Manager, error) {
	salt, err := LoadSalt(ps.SecretsSalt())
	if err != nil {
		return nil, &OpenError{File: ps.SecretsSalt(), Salt: true, Err: err}
	}
	state, err := LoadState(ps.SecretsState())
	if err != nil {
		return nil, &OpenError{File: ps.SecretsState(), Err: err}
	}
	return &Manager{Store: store, Sources: src, Digests: NewDigester(salt, 0), State: state, StatePath: ps.SecretsState(), Now: now}, nil
}

// OpenLocked is [Open] for a command that changes the store: when lock is set it first takes
// the secrets lock (ps.SecretsLock), held until the returned func is called, so that two
// commands never write the store and secrets.json at once. On an error nothing is held; the
// returned func is then a no-op, as it is without lock.
func OpenLocked(ps paths.Paths, store Store, src *Sources, now func() time.Time, lock bool) (*Manager, func(), error) {
	unlock := func() {}
	if lock {
		var err error
		if unlock, err = statefs.Lock(ps.SecretsLock()); err != nil {
			return nil, func() {}, err
		}
	}
	m, err := Open(ps, store, src, now)
	if err != nil {
		unlock()
		return nil, func() {}, err
	}
	return m, unlock, nil
}

// OpenError is a file [Open] could not read: the salt or secrets.json. Its message is the
// underlying error's.
type OpenError struct {
	File string
	Salt bool // File is the salt, not secrets.json
	Err  error
}

func (e *OpenError) Error() string { return e.Err.Error() }

func (e *OpenError) Unwrap() error { return e.Err }

// Purge removes name everywhere abox keeps it: from the store, from secrets.json and from every
// gateway's secrets file under gatewaysDir, so that no copy of the value stays on disk. It
// reports whether the store held it.
func (m *Manager) Purge(ctx context.Context, name, gatewaysDir string) (was bool, err error) {
	if was, err = m.Stored(ctx, name); err != nil {
		return false, err
	}
	if err := m.Remove(ctx, name); err != nil {
		return was, err
	}
	return was, ScrubGatewayFiles(gatewaysDir, name)
}
