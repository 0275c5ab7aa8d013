package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

// BinaryLabel records, on the netd image, the sha256 of the abox binary baked into it.
const BinaryLabel = "abox.binary-sha256"

// logTail is how many trailing lines of a failed build's output a [BuildError] keeps.
const logTail = 200

// Builder builds images. Its fields are everything it uses beyond the project.
type Builder struct {
	Docker *docker.Client
	// Home expands a leading ~ in config.yaml's paths.
	Home string
	// Now is the clock of Claude Code's release cache; nil means time.Now.
	Now func() time.Time
	// Progress, when set, receives a line of progress (unescaped) before each long step.
	Progress func(format string, args ...any)
	// Terminal, when set, receives the build's live progress line.
	Terminal io.Writer
	// NoCache rebuilds an image even when one with its tag exists, without docker's cache.
	NoCache bool
}

// Project is what a build takes from a loaded project.
type Project struct {
	Name   string // agentbox.yaml's project, the agent image's abox.project label
	Config *config.Config
	Paths  paths.Paths
	State  paths.Project
}

// Agent builds the project's agent image as tag unless an image with that tag (a hash of its
// Dockerfile and staged files) exists. Its inputs are checked first ([Builder.AgentContext]);
// the context is staged in the project's build directory.
func (b *Builder) Agent(ctx context.Context, p Project, tag string) error {
	if ok, err := b.Docker.ImageExists(ctx, tag); err == nil && ok && !b.NoCache {
		return nil
	}
	files, err := b.AgentContext(ctx, p)
	if err != nil {
		return err
	}
	dir := p.State.Build()
	if err := stage(ctx, dir, files); err != nil {
		return err
	}
	b.progressf("building %s (the first build takes a few minutes)", tag)
	return b.build(ctx, docker.BuildOptions{
		Tag: tag, ContextDir: dir, NoCache: b.NoCache,
		Labels: map[string]string{"abox.managed": "true", "abox.project": p.Name},
	})
}

// Netd builds the netd image as tag from binary, the running abox whose sha256 is binarySum,
// unless an image with that tag already holds that binary.
func (b *Builder) Netd(ctx context.Context, p Project, tag, binary, binarySum string) error {
	if binarySum == "" {
		return fmt.Errorf("cannot read the running abox binary %s", binary)
	}
	if img, err := b.Docker.ImageInspect(ctx, tag); err == nil && !b.NoCache && img.Labels[BinaryLabel] == binarySum {
		return nil
	}
	dir := filepath.Join(p.Paths.State, "build", "netd")
	if err := stage(ctx, dir, map[string]string{
		"Dockerfile": filepath.Join(p.State.Artifacts(), render.NetdDockerfile),
		"abox":       binary,
	}); err != nil {
		return err
	}
	b.progressf("building %s", tag)
	return b.build(ctx, docker.BuildOptions{
		Tag: tag, ContextDir: dir, NoCache: b.NoCache,
		Labels: map[string]string{BinaryLabel: binarySum, "abox.managed": "true"},
	})
}

// AgentContext checks the agent image's inputs and lists its build context (context path →
// source path): the rendered Dockerfile, the CA certificates, Claude Code (a file checked
// against claude_code.sha256, or the native build downloaded and verified, see claude.go) and
// rtk from a file, checked against rtk.sha256.
func (b *Builder) AgentContext(ctx context.Context, p Project) (map[string]string, error) {
	cfg := p.Config
	files := map[string]string{"Dockerfile": filepath.Join(p.State.Artifacts(), render.AgentDockerfile)}
	certs, err := CACerts(cfg.Image.CACertificates, b.Home)
	if err != nil {
		return nil, err
	}
	for _, c := range certs {
		files["ca/"+c.Name] = c.Path
	}
	switch cc := cfg.ClaudeCode; cc.Source {
	case config.SourceNative:
		if err := b.stageNativeClaude(ctx, p, certs, files); err != nil {
			return nil, err
		}
	case config.SourceFile:
		path := paths.ExpandHome(cc.Path, b.Home)
		if err := checkSHA256(path, cc.SHA256, "claude_code"); err != nil {
			return nil, err
		}
		files["claude"] = path
	}
	if r := cfg.RTK; r.Enabled && r.Source == config.SourceFile {
		path := paths.ExpandHome(r.Path, b.Home)
		if err := checkSHA256(path, r.SHA256, "rtk"); err != nil {
			return nil, err
		}
		files["rtk"] = path
	}
	return files, nil
}

// build runs a build. A build that fails (rather than being interrupted) is a [*BuildError]
// with the tail of its log.
func (b *Builder) build(ctx context.Context, o docker.BuildOptions) error {
	var log strings.Builder
	o.Log = &log
	o.Progress = b.Terminal
	err := b.Docker.Build(ctx, o)
	var ee *docker.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return &BuildError{Tag: o.Tag, Log: tailLines(log.String(), logTail), Err: err}
	}
	if err != nil {
		return fmt.Errorf("building %s: %w", o.Tag, err)
	}
	return nil
}

func (b *Builder) progressf(format string, args ...any) {
	if b.Progress != nil {
		b.Progress(format, args...)
	}
}

func (b *Builder) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
