package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/provision"
	"github.com/aboxhq/abox/internal/remedy"
	"github.com/aboxhq/abox/internal/render"
)

var (
	nativeBinary = []byte("#!/bin/sh\necho 'claude from the release'\n")
	nativeSum    = sha256Hex(nativeBinary)
)

func sha256Hex(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// nativeFixture is a project whose config.yaml takes Claude Code natively from a fake release
// host (HTTPS with its own certificate, trusted through image.ca_certificates), whose manifest
// names checksum for this machine's platform.
func nativeFixture(t *testing.T, checksum string) (*App, *project.Project, *dockertest.Fake) {
	t.Helper()
	platform, err := claudecode.PlatformFor(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/r/2.1.332/manifest.json":
			fmt.Fprintf(w, `{"version": "2.1.332", "platforms": {%q: {"binary": "claude", "checksum": %q, "size": %d}}}`,
				platform, checksum, len(nativeBinary))
		case "/r/2.1.332/" + platform + "/claude":
			_, _ = w.Write(nativeBinary)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "release-ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Image.CACertificates = []string{ca}
	cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceNative, Version: "2.1.332", ReleaseURL: srv.URL + "/r"}
	ps := paths.Paths{Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state")}
	p := &project.Project{Config: cfg, Paths: ps, State: ps.Project(filepath.Join(dir, "work")), Manifest: &manifest.Manifest{Project: "p"}}
	if err := os.MkdirAll(p.State.Artifacts(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.State.Artifacts(), render.AgentDockerfile), []byte("FROM scratch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := dockertest.New(t)
	a := &App{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Env: func(string) (string, bool) { return "", false },
		Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }}
	a.dockerClient = docker.NewClient(fake, nil)
	return a, p, fake
}

// TestNativeClaudeRefused: a binary that is not the one the manifest (or a pinned sha256)
// vouches for stops `abox up` (provision.BuildImages, as up calls it) with a boundary refusal before
// anything is staged or built; an unreachable release host is named.
func TestNativeClaudeRefused(t *testing.T) {
	other := sha256Hex([]byte("another build"))
	cases := []struct {
		name, manifestSum, pinned string
		exit                      int
		msg, hint                 string
	}{
		{"tampered binary", other, "", ExitBoundary, "has sha256 " + nativeSum + ", but the release manifest says " + other, "do not use this binary"},
		{"pinned sha256 wins", nativeSum, other, ExitBoundary, "but claude_code.sha256 says " + other, "pin claude_code.sha256 from a source you trust"},
		{"manifest of no use", "not-a-checksum", "", ExitBoundary, "checksum \"not-a-checksum\" is not 64 lower-case hex digits", "a mirror without manifests needs claude_code.sha256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, p, fake := nativeFixture(t, tc.manifestSum)
			p.Config.ClaudeCode.SHA256 = tc.pinned
			fake.On("image inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such image: abox-agent-p:1\n")})
			fake.On("build", docker.Result{}).Optional() // answered, so that a build despite the refusal shows below
			rs := &render.RunSpec{Agent: render.RunCommand{Image: "abox-agent-p:1"}}
			err := remedy.Provision(provision.BuildImages(context.Background(), a.provisionEnv(p, false), p, rs), "") // what `abox up` runs
			if err == nil || explicitExit(err) != tc.exit || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(hintOf(err), tc.hint) {
				t.Errorf("BuildImages = %v (hint %q), want exit %d with %q and hint %q", err, hintOf(err), tc.exit, tc.msg, tc.hint)
			}
			if slices.ContainsFunc(fake.Calls(), func(c dockertest.Call) bool { return c.Args[0] == "build" }) {
				t.Error("an image was built from the refused binary")
			}
			if _, err := os.Stat(filepath.Join(p.State.Build(), "claude")); err == nil {
				t.Error("the refused binary was staged for the build")
			}
		})
	}
	t.Run("unreadable cache record", func(t *testing.T) {
		a, p, _ := nativeFixture(t, nativeSum)
		platform, _ := claudecode.PlatformFor(runtime.GOARCH)
		dir := claudecode.Dir(p.Paths.ClaudeReleases(), "2.1.332", platform)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, claudecode.RecordFile), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := a.builder(false).AgentContext(context.Background(), p.Images())
		if err == nil || !strings.Contains(err.Error(), "is not a release record") || !strings.Contains(hintOf(err), "to download it afresh") {
			t.Errorf("AgentContext = %v (hint %q)", err, hintOf(err))
		}
	})
	t.Run("host unreachable", func(t *testing.T) {
		a, p, _ := nativeFixture(t, nativeSum)
		p.Config.ClaudeCode.ReleaseURL = "https://127.0.0.1:1/r"
		_, err := a.builder(false).AgentContext(context.Background(), p.Images())
		if err == nil || !strings.HasPrefix(err.Error(), "cannot download Claude Code 2.1.332 from 127.0.0.1:1: fetching https://127.0.0.1:1/r/2.1.332/manifest.json: ") ||
			!strings.Contains(hintOf(err), "allow HTTPS to 127.0.0.1:1") {
			t.Errorf("AgentContext = %v (hint %q)", err, hintOf(err))
		}
	})
}

// TestFileClaudeRefused: a Claude Code file whose sha256 is not claude_code.sha256 stops `abox
// up` with a boundary refusal (exit 3) and its fix, before anything is built.
func TestFileClaudeRefused(t *testing.T) {
	a, p, fake := nativeFixture(t, nativeSum)
	path := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(path, nativeBinary, 0o600); err != nil {
		t.Fatal(err)
	}
	other := sha256Hex([]byte("another build"))
	p.Config.ClaudeCode = config.ClaudeCode{Source: config.SourceFile, Version: "2.1.332", Path: path, SHA256: other}
	fake.On("image inspect", docker.Result{ExitCode: 1, Stderr: []byte("Error: No such image: abox-agent-p:1\n")})
	fake.On("build", docker.Result{}).Optional()
	rs := &render.RunSpec{Agent: render.RunCommand{Image: "abox-agent-p:1"}}
	err := remedy.Provision(provision.BuildImages(context.Background(), a.provisionEnv(p, false), p, rs), "")
	if explicitExit(err) != ExitBoundary || !strings.Contains(err.Error(), "has sha256 "+nativeSum+", but claude_code.sha256 is "+other) ||
		!strings.Contains(hintOf(err), "update claude_code.sha256 in config.yaml only if you trust this file") {
		t.Errorf("BuildImages = %v (hint %q), want exit %d", err, hintOf(err), ExitBoundary)
	}
	if slices.ContainsFunc(fake.Calls(), func(c dockertest.Call) bool { return c.Args[0] == "build" }) {
		t.Error("an image was built from the refused file")
	}
}
