package images

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/statefs"
)

// stageNativeClaude adds Claude Code's native binary to the agent build context files: from
// the release abox downloaded and verified before, or downloaded now from claude_code's release
// URL and verified against the release's manifest (or against claude_code.sha256 when set, which
// wins). Without a pinned sha256 the Dockerfile checks the copy against claude.sha256, staged
// beside it.
func (b *Builder) stageNativeClaude(ctx context.Context, p Project, certs []CACert, files map[string]string) error {
	cc := p.Config.ClaudeCode
	platform, err := claudecode.PlatformFor(runtime.GOARCH)
	if err != nil {
		return errorf("use claude_code.source: npm, or file with a binary for this machine", "%v", err)
	}
	var pems [][]byte
	for _, c := range certs {
		pems = append(pems, c.Data)
	}
	client, err := claudecode.NewClient(pems)
	if err != nil {
		return errorf("list PEM certificate files only in image.ca_certificates", "%v", err)
	}
	f := &claudecode.Fetcher{Client: client, BaseURL: cc.Releases(), Cache: p.Paths.ClaudeReleases(),
		Now: b.now, Progress: b.progressf}
	rel, err := f.Fetch(ctx, cc.Version, platform, cc.SHA256)
	if err != nil {
		return explainFetch(err, cc.Version, f.Cache)
	}
	files["claude"] = rel.Path
	if cc.SHA256 == "" {
		// Say plainly what the check rests on: the manifest, over TLS, unsigned as far as abox knows.
		b.progressf("Claude Code %s for %s: sha256 %s…, as its release manifest on %s gives it; the manifest's own signature "+
			"is not checked (pin claude_code.sha256 to rely on no host)", rel.Version, rel.Platform, rel.SHA256[:12], rel.Host())
		sumFile := rel.Path + ".sha256"
		if err := statefs.WriteFile(sumFile, []byte(rel.SHA256+"  claude\n"), statefs.PrivateMode); err != nil {
			return err
		}
		files["claude.sha256"] = sumFile
	}
	return nil
}

// explainFetch attaches the fix to an error of [claudecode.Fetcher.Fetch]. A binary that does
// not match what vouches for it is a boundary refusal: no image is built from it.
func explainFetch(err error, version, cache string) error {
	var fe *claudecode.FetchError
	var me *claudecode.MismatchError
	var mfe *claudecode.ManifestError
	var ce *claudecode.ChangedError
	switch {
	case errors.As(err, &fe):
		return errorf("abox downloads the native build on this host, as the official installer does: allow HTTPS to "+fe.Host()+
			", point claude_code.release_url at a mirror, or use claude_code.source: npm or file",
			"cannot download Claude Code %s from %s: %v", version, fe.Host(), err)
	case errors.As(err, &me):
		return refusef("do not use this binary; check claude_code.release_url and claude_code.version, or pin claude_code.sha256 from a source you trust",
			"refusing Claude Code %s: %v", version, err)
	case errors.As(err, &mfe):
		return refusef("check claude_code.version and claude_code.release_url; a mirror without manifests needs claude_code.sha256",
			"refusing Claude Code %s: %v", version, err)
	case errors.As(err, &ce):
		return refusef("find out why the release changed before trusting it; to accept it, remove "+ce.Record+
			" or pin claude_code.sha256", "refusing Claude Code %s: %v", version, err)
	}
	return &Error{Err: fmt.Errorf("preparing Claude Code %s: %w", version, err),
		Hint: "remove " + claudecode.Dir(cache, version, "") + " and run `abox up` again to download it afresh"}
}
