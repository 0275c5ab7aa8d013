package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

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
	unlock, err := p.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	approved, err := os.ReadFile(p.state.Approved())
	hasApproval := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if hasApproval {
		if prev, err := manifest.Parse(approved, "approved manifest"); err != nil || !sameManifest(prev, p.manifest) {
			fmt.Fprintf(a.Err, "agentbox.yaml changed since it was approved by `abox up`:\n%s", termtext.Text(manifest.LineDiff(string(approved), string(p.raw))))
			return nil, errorf("review the change and approve it with `abox up` first", "refusing to edit an unapproved manifest")
		}
	}
	doc, m, err := applyEdit(p.raw, edit)
	if err != nil {
		return nil, err
	}
	if err := statefs.WriteFile(p.manifestPath(), doc.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if hasApproval {
		if err := statefs.WriteFile(p.state.Approved(), doc.Bytes(), statefs.PrivateMode); err != nil {
			return nil, err
		}
	}
	p.manifest, p.raw = m, doc.Bytes()
	if _, err := a.renderProject(p); err != nil {
		return nil, err
	}
	a.reloadRunning(ctx, p)
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

// reloadRunning signals the netd of every running sandbox of the project to re-read its policy.
func (a *App) reloadRunning(ctx context.Context, p *project) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if a.requireDaemon(ctx) != nil {
		return
	}
	cs, err := a.docker().ContainersByLabel(ctx, map[string]string{"abox.hash": p.state.Hash, "abox.role": "netd"}, false)
	if err != nil {
		a.warnf("", "could not list running sandboxes: %v", err)
		return
	}
	for _, c := range cs {
		if err := a.docker().Kill(ctx, c.ID, "HUP"); err != nil {
			a.warnf("", "reloading a running sandbox: %v", err)
			continue
		}
		a.progressf("reloaded the policy of running sandbox %s", c.Names)
	}
}
