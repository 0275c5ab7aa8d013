package edit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/artifact"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/sandbox"
	"github.com/aboxhq/abox/internal/termtext"
)

// EgressResult is what an egress edit did.
type EgressResult struct {
	Message string // what the edit did, one line per kind of outcome
	// Changed is set when the allowlist changed: Reloaded then says whether running sandboxes
	// have it, since one that was not reloaded still reaches what a removal took away.
	Changed  bool
	Reloaded sandbox.Reloaded
}

// IgnoredError refuses to allow Host while egress_ignored holds a decision against it that the
// user did not take back.
type IgnoredError struct{ Host string }

func (e *IgnoredError) Error() string { return e.Host + " is in egress_ignored" }

// StaleError is a removal of Hosts that agentbox.yaml has, but running sandboxes may not:
// docker could not list them (Skipped), or some did not get the reload (Failed, "name: error").
// Such a sandbox still reaches what was removed, so the command did not do what it was asked.
type StaleError struct {
	Hosts   []string
	Skipped error
	Failed  []string
}

func (e *StaleError) Error() string {
	hosts := strings.Join(e.Hosts, ", ")
	if e.Skipped != nil {
		return fmt.Sprintf("%s removed from agentbox.yaml, but running sandboxes could not be listed to reload them: %s",
			hosts, termtext.Line(e.Skipped.Error()))
	}
	return fmt.Sprintf("%s still allowed by %d running sandbox(es) that were not reloaded: %s",
		hosts, len(e.Failed), termtext.Line(strings.Join(e.Failed, "; ")))
}

// AllowEgress adds hosts (canonical entries) to the allowlist. A host the manifest ignores is
// allowed only when the user confirms it on a terminal ([Env.Confirm]); otherwise it is an
// [*IgnoredError] and nothing is written.
func AllowEgress(ctx context.Context, p *project.Project, env Env, hosts []string) (*EgressResult, error) {
	return egressEdit(ctx, p, env, func(d *manifest.Doc) (string, error) {
		for _, h := range d.EgressIgnored(hosts) {
			if env.Confirm == nil || !env.Confirm(fmt.Sprintf("%s is ignored; unignore and allow it?", h)) {
				return "", &IgnoredError{Host: h}
			}
		}
		add, err := d.AllowEgress(hosts)
		return manifest.AllowedMessage(hosts, add), err
	})
}

// RemoveEgress removes hosts from the allowlist; a host abox adds to every allowlist itself
// stays, and the message says so. A removal that running sandboxes may not have got is saved,
// and reported with its result as a [*StaleError].
func RemoveEgress(ctx context.Context, p *project.Project, env Env, hosts []string) (*EgressResult, error) {
	res, err := egressEdit(ctx, p, env, func(d *manifest.Doc) (string, error) {
		return d.RemoveEgressHosts(hosts, mandatory(p)).Message(), nil
	})
	if err != nil || !res.Changed {
		return res, err
	}
	if r := res.Reloaded; r.Skipped != nil || len(r.Failed) > 0 {
		return res, &StaleError{Hosts: hosts, Skipped: r.Skipped, Failed: r.Failed}
	}
	return res, nil
}

// IgnoreEgress records a decision against hosts: still blocked, no longer in the review queue.
// A mandatory host is not ignored, and the message says so: abox allows it in every sandbox.
func IgnoreEgress(ctx context.Context, p *project.Project, env Env, hosts []string) (*EgressResult, error) {
	return egressEdit(ctx, p, env, func(d *manifest.Doc) (string, error) {
		ignored, kept, err := d.IgnoreEgressHosts(hosts, mandatory(p))
		return manifest.IgnoredMessage(ignored, kept), err
	})
}

// UnignoreEgress forgets the ignore decisions on hosts.
func UnignoreEgress(ctx context.Context, p *project.Project, env Env, hosts []string) (*EgressResult, error) {
	return egressEdit(ctx, p, env, func(d *manifest.Doc) (string, error) {
		return manifest.UnignoredMessage(hosts, d.UnignoreEgress(hosts)), nil
	})
}

// egressEdit applies fn, which returns what it did, and says whether the allowlist changed.
func egressEdit(ctx context.Context, p *project.Project, env Env, fn func(*manifest.Doc) (string, error)) (*EgressResult, error) {
	before := slices.Clone(p.Manifest.Egress)
	var msg string
	m, reloaded, err := Apply(ctx, p, env, func(d *manifest.Doc) error {
		var err error
		msg, err = fn(d)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &EgressResult{Message: msg, Changed: !slices.Equal(before, m.Egress), Reloaded: reloaded}, nil
}

// mandatory reports whether p's rendered policy, what netd enforces, has a host as an entry abox
// added itself; no host is, when there is no readable policy.
func mandatory(p *project.Project) func(string) bool {
	pol, err := artifact.ReadNetdPolicy(p.State.Artifacts())
	return func(host string) bool { return err == nil && pol.IsMandatory(host) }
}
