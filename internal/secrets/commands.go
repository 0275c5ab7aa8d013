package secrets

import (
	"context"
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/termtext"
)

// This file is what each `abox secrets` command does, short of its flags, its hints and the
// write of its output: cli maps the typed errors below to the command that fixes them.

// ReadError is a value `abox secrets set` could not read from the source File (empty for env,
// stdin and the prompt) names; nothing was stored. Its message is the underlying error's.
type ReadError struct {
	Name, File string
	Err        error
}

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// PutError is a value the store refused to take.
type PutError struct {
	Name string
	Err  error
}

func (e *PutError) Error() string { return "storing " + e.Name + ": " + e.Err.Error() }
func (e *PutError) Unwrap() error { return e.Err }

// SetResult is what `abox secrets set` did.
type SetResult struct {
	Name, Status, Store string
	// Next is set when a registered project's server uses the new value, which the running
	// gateway does not have yet.
	Next bool
}

// Set stores one value under name from the source g names ([Sources.ReadGiven]), read before
// the store is opened so that a prompt comes first, and records its digest.
func (h *Host) Set(ctx context.Context, name string, g Given, allowLoose bool) (*SetResult, error) {
	if err := CheckNames(name); err != nil {
		return nil, err
	}
	value, source, ref, err := h.Sources(allowLoose).ReadGiven(g, "value of "+name)
	if err != nil {
		return nil, &ReadError{Name: name, File: g.File, Err: err}
	}
	m, choice, unlock, err := h.Open(ctx, true, allowLoose)
	if err != nil {
		return nil, err
	}
	defer unlock()
	status, err := m.Put(ctx, name, value, source, ref, false)
	if err != nil {
		return nil, &PutError{Name: name, Err: err}
	}
	return &SetResult{Name: name, Status: status, Store: choice.Store.Kind(), Next: status != Unchanged && h.Served(name)}, nil
}

// InUseError refuses to remove secrets a registered project uses; Lines name every use.
type InUseError struct{ Lines []string }

func (e *InUseError) Error() string {
	return "refusing to remove a secret in use:\n" + strings.Join(e.Lines, "\n")
}

// Removal is one secret `abox secrets rm` removed: Was reports whether the store held it.
type Removal struct {
	Name string
	Was  bool
}

// RemoveReport is what `abox secrets rm` removed, in order.
type RemoveReport struct {
	Store   string
	Removed []Removal
}

// Remove removes names everywhere abox keeps them ([Manager.Purge]). Unless force, it refuses
// with an [*InUseError] while a registered project uses one; it warns of the stale projects
// whose uses may be missing from that check. On an error the report holds what was removed
// before it.
func (h *Host) Remove(ctx context.Context, names []string, force bool) (*RemoveReport, error) {
	if err := CheckNames(names...); err != nil {
		return nil, err
	}
	x, err := h.Index()
	if err != nil {
		return nil, err
	}
	if err := inUse(x, names); err != nil && !force {
		return nil, err
	}
	for _, s := range x.Stale {
		h.warn("", "%s: %s; what it uses may be missing above", staleName(s), s.Reason)
	}
	m, choice, unlock, err := h.Open(ctx, true, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep := &RemoveReport{Store: choice.Store.Kind()}
	for _, n := range names {
		was, err := m.Purge(ctx, n, h.Paths.GatewaysDir())
		if err != nil {
			return rep, err
		}
		rep.Removed = append(rep.Removed, Removal{Name: n, Was: was})
	}
	return rep, nil
}

// inUse is an [*InUseError] naming every use of names, or nil when nothing uses them.
func inUse(x *Index, names []string) error {
	var lines []string
	for _, n := range names {
		var who []string
		for _, u := range x.UsesOf(n) {
			who = append(who, useText(u))
		}
		if len(who) > 0 {
			lines = append(lines, n+" is used by "+strings.Join(who, ", "))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return &InUseError{Lines: lines}
}

// ListReport is `abox secrets ls`, as --json prints it.
type ListReport struct {
	Store   map[string]string `json:"store"`
	Secrets []Listing         `json:"secrets"`
	Stale   []StaleProject    `json:"stale"`
}

// List is the reverse index of every secret ([List]) with the store it reads.
func (h *Host) List(ctx context.Context, unused bool) (*ListReport, error) {
	cfg, err := h.Config()
	if err != nil {
		return nil, err
	}
	x, err := h.Index()
	if err != nil {
		return nil, err
	}
	m, choice, unlock, err := h.Open(ctx, false, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	stored, err := m.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	return &ListReport{Store: map[string]string{"kind": choice.Store.Kind(), "why": choice.Why},
		Secrets: List(stored, cfg, m.State, x, unused), Stale: x.Stale}, nil
}

// UnmappedError is a secret --only names that secrets.yaml does not map.
type UnmappedError struct{ Name string }

func (e *UnmappedError) Error() string {
	return fmt.Sprintf("--only %q: secrets.yaml does not map it", termtext.Line(e.Name))
}

// RowsReport is `abox secrets sync` or `abox secrets check`: a row per secret, or Empty, the
// line saying there was nothing to do.
type RowsReport struct {
	Verb       string // "sync" or "check"
	Rows       []Row
	Store, Why string
	Empty      string
	// Next is set when a sync stored values that a registered project's server uses.
	Next bool
}

// Sync pushes every readable source of secrets.yaml (only those named by only, when set) into
// the store ([Manager.SyncAll]); dryRun writes nothing and takes no lock.
func (h *Host) Sync(ctx context.Context, only []string, interactive, dryRun, allowLoose bool) (*RowsReport, error) {
	cfg, err := h.Config()
	if err != nil {
		return nil, err
	}
	mappings, unmapped := cfg.Select(only)
	if unmapped != "" {
		return nil, &UnmappedError{Name: unmapped}
	}
	if len(mappings) == 0 {
		return &RowsReport{Verb: "sync", Empty: h.Paths.SecretsFile() + " maps no secret; nothing to sync"}, nil
	}
	m, choice, unlock, err := h.Open(ctx, !dryRun, allowLoose)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep := &RowsReport{Verb: "sync", Rows: m.SyncAll(ctx, mappings, interactive, dryRun), Store: choice.Store.Kind(), Why: choice.Why}
	changed := Changed(rep.Rows)
	rep.Next = len(changed) > 0 && !dryRun && h.Served(changed...)
	return rep, nil
}

// Check compares every source of secrets.yaml and every secret required returns with the
// store, and writes nothing ([Manager.CheckAll]). required is asked after secrets.yaml loads.
func (h *Host) Check(ctx context.Context, required func() ([]Need, error)) (*RowsReport, error) {
	cfg, err := h.Config()
	if err != nil {
		return nil, err
	}
	need, err := required()
	if err != nil {
		return nil, err
	}
	m, choice, unlock, err := h.Open(ctx, false, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep := &RowsReport{Verb: "check", Rows: m.CheckAll(ctx, cfg, need), Store: choice.Store.Kind(), Why: choice.Why}
	if len(rep.Rows) == 0 {
		rep.Empty = "no secret is mapped in secrets.yaml or required here; nothing to check"
	}
	return rep, nil
}

// AttentionError is a sync or check whose rows hold failures. Fix is the last failed row that
// a single command fixes (missing-in-store, unmapped, drifted); zero when none is.
type AttentionError struct {
	Verb  string
	Bad   []Row
	Total int
	Fix   Row
}

func (e *AttentionError) Error() string {
	var bad []string
	for _, r := range e.Bad {
		bad = append(bad, r.Secret+" ("+r.Status+")")
	}
	return fmt.Sprintf("%d of %d secrets need attention: %s", len(e.Bad), e.Total, strings.Join(bad, ", "))
}

// Verdict is an [*AttentionError] when any row failed, else nil.
func (r *RowsReport) Verdict() error {
	e := &AttentionError{Verb: r.Verb, Total: len(r.Rows)}
	for _, row := range r.Rows {
		if row.OK() {
			continue
		}
		e.Bad = append(e.Bad, row)
		switch row.Status {
		case MissingInStore, Unmapped, Drifted:
			e.Fix = row
		}
	}
	if len(e.Bad) == 0 {
		return nil
	}
	return e
}

// Edit applies an edit to the project's manifest as a command of the user does (edit.Apply:
// validated, written, approved, rendered) and returns the result.
type Edit func(func(*manifest.Doc) error) (*manifest.Manifest, error)

// AttachReport is what `abox secrets attach` or `detach` did: a line per variable, and what the
// manifest attaches now.
type AttachReport struct {
	Lines    []string
	Attached map[string]string
}

// Attach records each pair in the manifest's env_secrets through edit, and says whether the
// store holds its secret yet.
func (h *Host) Attach(ctx context.Context, pairs []manifest.EnvSecret, edit Edit) (*AttachReport, error) {
	m, err := edit(func(d *manifest.Doc) error {
		for _, pr := range pairs {
			if err := d.AttachSecret(pr.Env, pr.Secret); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	stored := h.StoredNames(ctx)
	rep := &AttachReport{Attached: m.EnvSecrets}
	for _, pr := range pairs {
		rep.Lines = append(rep.Lines, attachedLine(pr, stored))
	}
	return rep, nil
}

// Detach removes envs from m's env_secrets through edit, warning of those not attached. The
// report is nil when none of them is, and nothing is edited then.
func (h *Host) Detach(m *manifest.Manifest, envs []string, edit Edit) (*AttachReport, error) {
	was := m.EnvSecrets
	gone, absent := m.SplitAttached(envs)
	for _, env := range absent {
		h.warn("", "%s is not attached", env)
	}
	if len(gone) == 0 {
		return nil, nil
	}
	now, err := edit(func(d *manifest.Doc) error {
		d.DetachSecrets(gone...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep := &AttachReport{Attached: now.EnvSecrets}
	for _, env := range gone {
		rep.Lines = append(rep.Lines, fmt.Sprintf("detached %s (was ← %s); the next run starts the agent without it", env, was[env]))
	}
	return rep, nil
}
