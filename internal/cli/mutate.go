package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/approval"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/statefs"
	"github.com/aboxhq/abox/internal/termtext"
)

// mutate applies a CLI edit to the manifest: the whole result is re-validated, written
// atomically, re-rendered, and pushed to the project's running sandboxes. Fields and comments the
// edit does not touch are kept.
//
// A command run by the user on the host is an approval of exactly that edit, so the approved copy
// gets the same edit. To keep it exactly that edit, a workspace manifest with changes nobody
// approved (the agent can write the workspace) is refused first.
func (a *App) mutate(ctx context.Context, p *project, edit func(*manifest.Doc) error) (*manifest.Manifest, error) {
	m, _, err := a.mutateReload(ctx, p, edit)
	return m, err
}

// mutateReload is [App.mutate], also returning what the push to running sandboxes did, for a
// command whose result depends on it (egress).
func (a *App) mutateReload(ctx context.Context, p *project, edit func(*manifest.Doc) error) (*manifest.Manifest, reloadResult, error) {
	m, err := a.applyMutation(p, edit)
	if err != nil {
		return nil, reloadResult{}, err
	}
	return m, a.reloadRunning(ctx, p), nil
}

// applyMutation is the part of [App.mutate] that holds the project's lock: edit, write, render.
func (a *App) applyMutation(p *project, edit func(*manifest.Doc) error) (*manifest.Manifest, error) {
	unlock, err := p.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	// A never-approved project is edited in the workspace only; a corrupt approval is refused
	// (exit 3), as `abox run` refuses it.
	_, err = approval.Check(p.state, p.manifest, p.raw)
	hasApproval := !errors.Is(err, approval.ErrNotApproved)
	var changed *approval.ChangedError
	if errors.As(err, &changed) {
		fmt.Fprintf(a.Err, "%v:\n%s", changed, termtext.Text(changed.Diff))
		return nil, errorf("review the change and approve it with `abox up` first", "refusing to edit an unapproved manifest")
	}
	if err != nil && hasApproval {
		return nil, err
	}
	doc, m, err := applyEdit(p.raw, edit)
	if err != nil {
		return nil, err
	}
	if err := statefs.WriteFile(p.manifestPath(), doc.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if hasApproval {
		if err := approval.Record(p.state, doc.Bytes()); err != nil {
			return nil, err
		}
	}
	p.manifest, p.raw = m, doc.Bytes()
	if _, err := a.renderProject(p); err != nil {
		return nil, err
	}
	return m, nil
}

// applyEdit runs edit on the document of raw and validates the result.
func applyEdit(raw []byte, edit func(*manifest.Doc) error) (*manifest.Doc, *manifest.Manifest, error) {
	doc, err := manifest.ParseDoc(raw, manifest.FileName)
	if err != nil {
		return nil, nil, err
	}
	if err := edit(doc); err != nil {
		return nil, nil, err
	}
	m, err := doc.Manifest(manifest.FileName)
	if err != nil {
		return nil, nil, withHint(err, "nothing was written")
	}
	return doc, m, nil
}

// reloadResult is what [App.reloadRunning] did.
type reloadResult struct {
	skipped  error    // docker could not be asked which sandboxes run; nothing was signalled
	reloaded []string // netd containers that got the reload signal
	failed   []string // "name: error" of those that did not
}

// String says what happened, as one line for the end of a command's result. Names and errors
// come from docker: print it through termtext.Line.
func (r reloadResult) String() string {
	switch n := len(r.reloaded) + len(r.failed); {
	case r.skipped != nil:
		return "running sandboxes were not reloaded: " + r.skipped.Error()
	case n == 0:
		return "no sandbox of this project is running; the next run uses the new allowlist"
	case len(r.failed) == 0:
		return fmt.Sprintf("reloaded %s: %s", countNoun(n, "running sandbox", "running sandboxes"), strings.Join(r.reloaded, ", "))
	default:
		return fmt.Sprintf("reloaded %d of %s; not reloaded: %s; it keeps the old allowlist until it is "+
			"restarted or reloaded with `docker kill --signal HUP <name>`", len(r.reloaded),
			countNoun(n, "running sandbox", "running sandboxes"), strings.Join(r.failed, "; "))
	}
}

func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// reloadRunning signals the netd of every running sandbox of the project to re-read its policy,
// and says which got the signal. A delivered SIGHUP is what counts as reloaded: netd re-reads
// its policy files on it.
func (a *App) reloadRunning(ctx context.Context, p *project) reloadResult {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := a.requireDaemon(ctx); err != nil {
		return reloadResult{skipped: err}
	}
	cs, err := a.docker().ContainersByLabel(ctx, map[string]string{"abox.hash": p.state.Hash, "abox.role": "netd"}, false)
	if err != nil {
		a.warnf("", "could not list running sandboxes: %v", err)
		return reloadResult{skipped: fmt.Errorf("listing them: %w", err)}
	}
	var r reloadResult
	for _, c := range cs {
		name := strings.Join(c.Names, ",")
		if err := a.docker().Kill(ctx, c.ID, "HUP"); err != nil {
			a.warnf("", "reloading a running sandbox: %v", err)
			r.failed = append(r.failed, name+": "+err.Error())
			continue
		}
		a.progressf("reloaded the policy of running sandbox %s", name)
		r.reloaded = append(r.reloaded, name)
	}
	return r
}
