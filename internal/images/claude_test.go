package images

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
)

var (
	nativeBinary = []byte("#!/bin/sh\necho 'claude from the release'\n")
	nativeSum    = sha256Hex(nativeBinary)
)

// nativeFixture is a project whose config.yaml takes Claude Code natively from a fake release
// host (HTTPS with its own certificate, trusted through image.ca_certificates), whose manifest
// says manifest for this machine's platform (see nativeManifest).
func nativeFixture(t *testing.T, manifest func(platform string) string) *fixture {
	t.Helper()
	platform, err := claudecode.PlatformFor(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/r/2.1.332/manifest.json":
			fmt.Fprint(w, manifest(platform))
		case "/r/2.1.332/" + platform + "/claude":
			_, _ = w.Write(nativeBinary)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := config.Default()
	f := newFixture(t, cfg)
	cfg.Image.CACertificates = []string{f.write("release-ca.crt", certPEM(srv))}
	cfg.ClaudeCode = config.ClaudeCode{Source: config.SourceNative, Version: "2.1.332", ReleaseURL: srv.URL + "/r"}
	f.render("", nil)
	return f
}

// nativeManifest is a release manifest naming checksum for the platform.
func nativeManifest(checksum string) func(string) string {
	return func(platform string) string {
		return fmt.Sprintf(`{"version": "2.1.332", "platforms": {%q: {"binary": "claude", "checksum": %q, "size": %d}}}`,
			platform, checksum, len(nativeBinary))
	}
}

func certPEM(srv *httptest.Server) []byte {
	return pemBlock("CERTIFICATE", srv.Certificate().Raw)
}

// TestNativeClaudeIsVerifiedAndStaged: the agent image is built from a Claude Code downloaded
// and checked against the release's manifest, with no sha256 in config.yaml; the build context
// holds the binary and the checksum the Dockerfile checks it against again.
func TestNativeClaudeIsVerifiedAndStaged(t *testing.T) {
	f := nativeFixture(t, nativeManifest(nativeSum))
	f.fake.On("image inspect", noImage)
	f.fake.On("build", docker.Result{})
	if err := f.b.Agent(context.Background(), f.p, agentTag); err != nil {
		t.Fatalf("Agent = %v (hint %q)", err, hintOf(err))
	}
	staged, err := os.ReadFile(filepath.Join(f.p.State.Build(), "claude"))
	if err != nil || string(staged) != string(nativeBinary) {
		t.Errorf("staged claude = %q, %v; want the release's binary", staged, err)
	}
	sum, err := os.ReadFile(filepath.Join(f.p.State.Build(), "claude.sha256"))
	if err != nil || string(sum) != nativeSum+"  claude\n" {
		t.Errorf("staged claude.sha256 = %q, %v", sum, err)
	}
	if len(f.builds()) != 1 {
		t.Error("no image was built")
	}
	if errs := f.progress.String(); !strings.Contains(errs, "downloading Claude Code 2.1.332 for linux-") ||
		!strings.Contains(errs, "sha256 "+nativeSum[:12]+"…, as its release manifest on 127.0.0.1:") ||
		!strings.Contains(errs, "the manifest's own signature is not checked") {
		t.Errorf("progress does not say what was downloaded and what the check rests on: %q", errs)
	}
}

// TestNativeClaudeRefused: a binary that is not the one the manifest (or a pinned sha256)
// vouches for, or one nothing vouches for (no checksum for this platform, or one that is not a
// sha256), is a boundary refusal with its fix, before anything is staged or built.
func TestNativeClaudeRefused(t *testing.T) {
	other := sha256Hex([]byte("another build"))
	cases := []struct {
		name     string
		manifest func(string) string
		pinned   string
		msg      string
		hint     string
	}{
		{"tampered binary", nativeManifest(other), "", "has sha256 " + nativeSum + ", but the release manifest says " + other, "do not use this binary"},
		{"pinned sha256 wins", nativeManifest(nativeSum), other, "but claude_code.sha256 says " + other, "pin claude_code.sha256 from a source you trust"},
		{"checksum not a sha256", nativeManifest("not-a-checksum"), "", `checksum "not-a-checksum" is not 64 lower-case hex digits`, "a mirror without manifests needs claude_code.sha256"},
		{"no checksum", nativeManifest(""), "", "refusing Claude Code 2.1.332: ", "a mirror without manifests needs claude_code.sha256"},
		{"no entry for this platform", func(string) string {
			return `{"version": "2.1.332", "platforms": {"plan9-mips": {"binary": "claude", "checksum": "` + nativeSum + `", "size": 1}}}`
		}, "", "refusing Claude Code 2.1.332: ", "a mirror without manifests needs claude_code.sha256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := nativeFixture(t, tc.manifest)
			f.p.Config.ClaudeCode.SHA256 = tc.pinned
			f.fake.On("image inspect", noImage)
			f.fake.On("build", docker.Result{}).Optional() // answered, so that a build despite the refusal shows below
			err := f.b.Agent(context.Background(), f.p, agentTag)
			var ie *Error
			if !errors.As(err, &ie) || !ie.Refused || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(ie.HintText(), tc.hint) {
				t.Errorf("Agent = %v (hint %q), want a refusal with %q and hint %q", err, hintOf(err), tc.msg, tc.hint)
			}
			if len(f.builds()) != 0 {
				t.Error("an image was built from the refused binary")
			}
			if _, err := os.Stat(f.p.State.Build()); err == nil {
				t.Error("a build context was staged for the refused binary")
			}
		})
	}
}

// TestNativeClaudeErrors: what is not a refusal still names its fix.
func TestNativeClaudeErrors(t *testing.T) {
	t.Run("unreadable cache record", func(t *testing.T) {
		f := nativeFixture(t, nativeManifest(nativeSum))
		platform, _ := claudecode.PlatformFor(runtime.GOARCH)
		f.write(filepath.Join("state", "claude-code", "2.1.332", platform, claudecode.RecordFile), []byte("{"))
		if dir := claudecode.Dir(f.p.Paths.ClaudeReleases(), "2.1.332", platform); !strings.HasPrefix(dir, f.dir) {
			t.Fatalf("the release cache is at %s, outside the fixture", dir)
		}
		_, err := f.b.AgentContext(context.Background(), f.p)
		if err == nil || !strings.Contains(err.Error(), "is not a release record") || !strings.Contains(hintOf(err), "to download it afresh") {
			t.Errorf("AgentContext = %v (hint %q)", err, hintOf(err))
		}
	})
	t.Run("host unreachable", func(t *testing.T) {
		f := nativeFixture(t, nativeManifest(nativeSum))
		f.p.Config.ClaudeCode.ReleaseURL = "https://127.0.0.1:1/r"
		_, err := f.b.AgentContext(context.Background(), f.p)
		var ie *Error
		if !errors.As(err, &ie) || ie.Refused || !strings.HasPrefix(err.Error(), "cannot download Claude Code 2.1.332 from 127.0.0.1:1: ") ||
			!strings.Contains(hintOf(err), "allow HTTPS to 127.0.0.1:1") {
			t.Errorf("AgentContext = %v (hint %q)", err, hintOf(err))
		}
	})
	t.Run("a CA that is not PEM", func(t *testing.T) {
		f := nativeFixture(t, nativeManifest(nativeSum))
		f.p.Config.Image.CACertificates = []string{f.write("junk.crt", []byte("-----BEGIN CERTIFICATE-----\nnot base64\n"))}
		_, err := f.b.AgentContext(context.Background(), f.p)
		if err == nil || !strings.Contains(hintOf(err), "PEM certificate files only") {
			t.Errorf("AgentContext = %v (hint %q)", err, hintOf(err))
		}
	})
}

// TestNativeClaudePinned: a pinned sha256 is checked on the host and rendered into the
// Dockerfile, so no checksum file is staged.
func TestNativeClaudePinned(t *testing.T) {
	f := nativeFixture(t, nativeManifest(sha256Hex([]byte("the manifest is not read"))))
	f.p.Config.ClaudeCode.SHA256 = nativeSum
	files, err := f.b.AgentContext(context.Background(), f.p)
	if err != nil {
		t.Fatalf("AgentContext = %v", err)
	}
	if _, ok := files["claude.sha256"]; ok || files["claude"] == "" {
		t.Errorf("AgentContext files = %v, want claude and no claude.sha256", files)
	}
}

// hintOf returns the hint an error carries, as cli prints it after ↳.
func hintOf(err error) string {
	var h interface{ HintText() string }
	if errors.As(err, &h) {
		return h.HintText()
	}
	return ""
}
