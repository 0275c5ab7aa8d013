package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/statefs"
)

// binaryLabel records, on the netd image, the sha256 of the abox binary baked into it.
const binaryLabel = "abox.binary-sha256"

// buildOptions are the choices of `abox up` for images.
type buildOptions struct {
	noCache bool
}

// ensureNetdImage builds the netd image from the running abox binary unless an image with this
// tag already holds that binary.
func (a *App) ensureNetdImage(ctx context.Context, p *project, rs *render.RunSpec, o buildOptions) error {
	binSum := a.binarySHA256()
	if binSum == "" {
		return fmt.Errorf("cannot read the running abox binary %s", a.Executable)
	}
	if img, err := a.docker().ImageInspect(ctx, rs.Netd.Image); err == nil && !o.noCache && img.Labels[binaryLabel] == binSum {
		return nil
	}
	dir := filepath.Join(p.paths.State, "build", "netd")
	if err := stageContext(dir, map[string]string{
		"Dockerfile": filepath.Join(p.state.Artifacts(), render.NetdDockerfile),
		"abox":       a.Executable,
	}); err != nil {
		return err
	}
	a.progressf("building %s", rs.Netd.Image)
	return a.build(ctx, docker.BuildOptions{
		Tag: rs.Netd.Image, ContextDir: dir, NoCache: o.noCache,
		Labels: map[string]string{binaryLabel: binSum, "abox.managed": "true"},
	})
}

// ensureAgentImage builds the agent image unless one with this tag (a hash of its Dockerfile and
// staged files) exists.
func (a *App) ensureAgentImage(ctx context.Context, p *project, rs *render.RunSpec, o buildOptions) error {
	if ok, err := a.docker().ImageExists(ctx, rs.Agent.Image); err == nil && ok && !o.noCache {
		return nil
	}
	files, err := a.agentContext(ctx, p)
	if err != nil {
		return err
	}
	dir := p.state.Build()
	if err := stageContext(dir, files); err != nil {
		return err
	}
	a.progressf("building %s (the first build takes a few minutes)", rs.Agent.Image)
	return a.build(ctx, docker.BuildOptions{
		Tag: rs.Agent.Image, ContextDir: dir, NoCache: o.noCache,
		Labels: map[string]string{"abox.managed": "true", "abox.project": p.manifest.Project},
	})
}

// agentContext lists the agent build context: the Dockerfile, CA certificates, Claude Code (for
// the file source checked against its configured sha256, for the native source downloaded and
// verified, see images_claude.go) and rtk, checked against its sha256 first.
func (a *App) agentContext(ctx context.Context, p *project) (map[string]string, error) {
	home := a.getenv("HOME")
	files := map[string]string{"Dockerfile": filepath.Join(p.state.Artifacts(), render.AgentDockerfile)}
	certs, err := caCerts(p.cfg.Image.CACertificates, home)
	if err != nil {
		return nil, err
	}
	for i, c := range certs {
		files["ca/"+c.name] = paths.ExpandHome(p.cfg.Image.CACertificates[i], home)
	}
	cc := p.cfg.ClaudeCode
	switch cc.Source {
	case config.SourceNative:
		if err := a.stageNativeClaude(ctx, p, certs, files); err != nil {
			return nil, err
		}
	case config.SourceFile:
		path := paths.ExpandHome(cc.Path, home)
		if err := checkSHA256(path, cc.SHA256, "claude_code"); err != nil {
			return nil, err
		}
		files["claude"] = path
	}
	if r := p.cfg.RTK; r.Enabled && r.Source == config.SourceFile {
		path := paths.ExpandHome(r.Path, home)
		if err := checkSHA256(path, r.SHA256, "rtk"); err != nil {
			return nil, err
		}
		files["rtk"] = path
	}
	return files, nil
}

func checkSHA256(path, want, key string) error {
	got, err := fileSHA256(path)
	if err != nil {
		return errorf("set "+key+".path in config.yaml to an existing file", "reading %s: %v", path, err)
	}
	if got != want {
		return errorf("update "+key+".sha256 in config.yaml only if you trust this file",
			"%s has sha256 %s, but %s.sha256 is %s", path, got, key, want)
	}
	return nil
}

// build runs a build with a progress line on a terminal and the full log on failure.
func (a *App) build(ctx context.Context, o docker.BuildOptions) error {
	var log strings.Builder
	o.Log = &log
	if a.TTY {
		o.Progress = a.Err
	}
	err := a.docker().Build(ctx, o)
	var ee *docker.ExitError
	if errors.As(err, &ee) {
		fmt.Fprintf(a.Err, "--- build log of %s ---\n%s--- end of build log ---\n", o.Tag, tailLines(log.String(), 200))
		return errorf("fix the cause above; re-run `abox up` (add --no-cache to rebuild from scratch)", "building %s failed", o.Tag)
	}
	return err
}

// stageContext replaces dir with copies of files (context path → source path).
func stageContext(dir string, files map[string]string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing %s: %w", dir, err)
	}
	if err := statefs.MkdirAll(dir); err != nil {
		return err
	}
	for rel, src := range files {
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		if err := copyFile(src, dst); err != nil {
			return fmt.Errorf("staging %s: %w", rel, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func tailLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
